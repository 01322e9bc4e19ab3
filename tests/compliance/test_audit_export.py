"""``manage.py audit_export`` and ``python -m compliance.domain.verify``: bundles that verify offline, and every way of
tampering with one that must fail, naming the event."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compliance import selectors
from compliance.domain.verify import BundleError, canonical_event, load_public_key, verify_bundle
from compliance.models import AuditCheckpoint
from compliance.selectors import audit_chain_verify, chain_rows, row_hash
from compliance.services.audit import audit_checkpoint_take
from compliance.signing import Signer, audit_signer
from core.audit import audit_record
from core.domain.chain import GENESIS_HASH, HASHED_FIELDS, canonical_json, event_hash, format_time
from core.models import AuditChainHead, AuditEvent
from tests.support import ROOT, SYSTEM
from tests.support.audit_tamper import tamper_update


def take(**kwargs: Any) -> AuditCheckpoint:
    checkpoint = audit_checkpoint_take(**kwargs)
    assert checkpoint is not None
    return checkpoint


# --- helpers -----------------------------------------------------------------------------------------------------


@pytest.fixture
def key_file(tmp_path, db) -> Path:
    path = tmp_path / "audit-key.pem"
    path.write_text(audit_signer().public_key_pem)
    return path


@pytest.fixture
def world(compliance, acme, alice, charlie):
    """Two tenants' events and a staff user's: seq 1 staff, 2-3 acme, 4-5 globex; then 6-8 acme's again."""
    for i in range(3):
        record(f"acme.thing.{i}", tenant=acme, data={"i": i, "note": 'naïve "quoted"\nline'})
    return acme


def record(action: str, tenant: Any = None, data: dict[str, Any] | None = None) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=SYSTEM, action=action, target_type="thing", target_id=1, tenant=tenant, data=data)


def export(path: Path, *args: str) -> str:
    out = StringIO()
    call_command("audit_export", "--out", str(path), *args, stdout=out)
    return out.getvalue()


def verify_offline(bundle: Path, key: Path, *, block_django: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m compliance.domain.verify`` in a fresh process with no Django settings, no database and no secret."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY"}}
    if block_django:  # importing Django at all would fail
        code = "import runpy, sys; sys.modules['django'] = None; runpy.run_module('compliance.domain.verify', run_name='__main__')"  # noqa: E501
        command = [sys.executable, "-c", code, str(bundle), "--public-key", str(key)]
    else:
        command = [sys.executable, "-m", "compliance.domain.verify", str(bundle), "--public-key", str(key)]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records))
    return path


def verify_in_process(path: Path, key: Path) -> str:
    return verify_bundle(path.open("rb"), [load_public_key(key.read_bytes())]).describe()


def failure(path: Path, key: Path) -> BundleError:
    with pytest.raises(BundleError) as excinfo:
        verify_in_process(path, key)
    return excinfo.value


def index_of(records: list[dict[str, Any]], seq: int, kind: str = "event") -> int:
    return next(i for i, r in enumerate(records) if r.get("type") == kind and r.get("seq") == seq)


def reseal(records: list[dict[str, Any]], signer: Signer) -> list[dict[str, Any]]:
    """What a forger holding ``signer`` does after changing records: a fresh seal over them, with that key."""
    body = records[:-1]
    digest = hashlib.sha256(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in body)).hexdigest()
    counts = {kind + "s": sum(1 for r in body if r.get("type") == kind) for kind in ("event", "link", "checkpoint")}
    signature = signer.sign_seal(sha256=digest, **counts)
    return [*body, {"type": "seal", **counts, "sha256": digest, "key_id": signer.key_id, "signature": signature}]


# --- the fast encoding is the chain's encoding -------------------------------------------------------------------

TEXT = st.text(max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=10,
)
OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
EVENTS = st.fixed_dictionaries(
    {
        "seq": st.integers(min_value=1, max_value=2**62),
        "at": st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=OFFSETS),  # noqa: DTZ001
        "actor_type": TEXT,
        "actor_id": TEXT,
        "actor_label": TEXT,
        "api_key_prefix": TEXT,
        "tenant_id": st.none() | st.integers(min_value=1, max_value=2**62),
        "action": TEXT,
        "target_type": TEXT,
        "target_id": TEXT,
        "data": st.dictionaries(TEXT, JSON, max_size=4),
        "prev_hash": st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    }
)


@settings(max_examples=300, deadline=None)
@given(event=EVENTS)
def test_the_fast_encoding_is_the_chains(event):
    spelled = {**event, "at": format_time(event["at"])}
    assert canonical_event(*[spelled[name] for name in HASHED_FIELDS]) == canonical_json(spelled)
    row = (*(json.dumps(spelled[n]) if n == "data" else spelled[n] for n in HASHED_FIELDS), event_hash(event))
    assert row_hash(row) == event_hash(event)


def test_a_float_smuggled_into_data_is_a_mismatch_not_a_crash():
    fields: dict[str, Any] = {name: "x" for name in HASHED_FIELDS}
    fields |= {"seq": 1, "tenant_id": None, "prev_hash": GENESIS_HASH}
    fields |= {"at": datetime(2026, 1, 1, tzinfo=UTC), "data": {"gpus": 1}}
    stored = event_hash(fields)
    row = tuple(format_time(fields["at"]) if n == "at" else fields[n] for n in HASHED_FIELDS[:10])
    assert row_hash((*row, '{"gpus": 1}', GENESIS_HASH, stored)) == stored
    assert row_hash((*row, '{"gpus": 1.0}', GENESIS_HASH, stored)) is None


# --- export, then verify offline ---------------------------------------------------------------------------------


def test_it_exports_everything_and_verifies_offline_without_django(world, tmp_path, key_file):
    bundle = tmp_path / "all.jsonl"
    said = export(bundle)

    checkpoint = AuditCheckpoint.objects.get()  # taken on demand: none covered the log yet
    total = AuditEvent.objects.count()
    assert checkpoint.seq == total
    assert said.startswith(f"exported {total} events, 0 links, 1 checkpoints (seq 1..{total}) to ")
    records = lines_of(bundle)
    header = records[0]
    assert header["format"] == "ladder-audit-bundle"
    assert header["version"] == 1
    assert header["key_id"] == audit_signer().key_id
    assert header["public_key"] == key_file.read_text()
    assert header["filter"] == {"tenant": None, "tenant_id": None, "from": None, "to": None}
    assert [r["type"] for r in records[1:]] == ["event"] * total + ["checkpoint", "seal"]
    stored = AuditEvent.objects.order_by("seq").values(*HASHED_FIELDS, "hash")
    assert [{k: v for k, v in r.items() if k != "type"} for r in records[1:-2]] == [
        {**e, "at": format_time(e["at"])} for e in stored
    ]

    done = verify_offline(bundle, key_file)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{total} events, 0 links, 1 checkpoints verified, key {audit_signer().key_id}\n"
    assert verify_offline(bundle, key_file, block_django=True).returncode == 0


def test_it_exports_one_tenant_with_link_records_that_verify(world, tmp_path, key_file):
    bundle = tmp_path / "acme.jsonl"
    export(bundle, "--tenant", "acme")

    records = lines_of(bundle)
    acme_seqs = list(AuditEvent.objects.filter(tenant=world).order_by("seq").values_list("seq", flat=True))
    last = AuditEvent.objects.count()
    events = [r["seq"] for r in records if r.get("type") == "event"]
    links = [r["seq"] for r in records if r.get("type") == "link"]
    assert events == acme_seqs
    assert sorted(events + links) == list(range(acme_seqs[0], last + 1))  # contiguous up to the checkpoint
    assert all(set(r) == {"type", "seq", "prev_hash", "hash"} for r in records if r.get("type") == "link")
    assert not any(r.get("tenant_id") not in (None, world.pk) for r in records if r.get("type") == "event")
    assert records[0]["filter"]["tenant"] == "acme"

    done = verify_offline(bundle, key_file)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{len(events)} events, {len(links)} links, 1 checkpoints verified")


def test_it_exports_a_time_window(world, tmp_path, key_file):
    second, fourth = AuditEvent.objects.get(seq=2).at, AuditEvent.objects.get(seq=4).at
    bundle = tmp_path / "window.jsonl"
    export(bundle, "--from", second.isoformat(), "--to", fourth.isoformat())
    records = lines_of(bundle)
    assert [r["seq"] for r in records if r.get("type") == "event"] == [2, 3]  # from inclusive, to exclusive
    assert records[0]["filter"]["from"] == format_time(second)
    assert verify_offline(bundle, key_file).returncode == 0


def test_it_reuses_a_checkpoint_that_covers_the_selection(world, tmp_path, key_file):
    first = take()
    record("later", tenant=None)
    events = AuditEvent.objects.count()
    bundle = tmp_path / "acme.jsonl"
    export(bundle, "--tenant", "acme")

    assert AuditEvent.objects.count() == events  # no new checkpoint, no new event
    records = lines_of(bundle)
    assert records[-2] == {
        "type": "checkpoint",
        "seq": first.seq,
        "hash": first.hash,
        "at": format_time(first.at),
        "key_id": first.key_id,
        "signature": first.signature,
    }
    assert verify_offline(bundle, key_file).returncode == 0


def test_it_carries_every_checkpoint_on_the_way(world, tmp_path, key_file):
    taken = [take()]
    record("between")
    taken.append(take())
    bundle = tmp_path / "all.jsonl"
    export(bundle)
    records = lines_of(bundle)
    for checkpoint in taken:  # each right after the record it vouches for
        at = index_of(records, checkpoint.seq, "checkpoint")
        assert records[at - 1]["seq"] == checkpoint.seq
    assert verify_in_process(bundle, key_file).startswith(
        f"{AuditEvent.objects.count()} events, 0 links, 2 checkpoints"
    )


def test_it_exports_an_empty_selection(world, tmp_path, key_file):
    bundle = tmp_path / "empty.jsonl"
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert export(bundle, "--from", future).startswith("exported 0 events, 0 links, 0 checkpoints to ")
    records = lines_of(bundle)
    assert [r.get("type") for r in records] == [None, "seal"]
    assert not AuditCheckpoint.objects.exists()
    done = verify_offline(bundle, key_file)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 events, 0 links, 0 checkpoints verified")


def test_it_refuses_to_export_a_broken_chain(world, tmp_path):
    tamper_update(3, data={"role": "viewer", "username": "alice"})
    bundle = tmp_path / "broken.jsonl"
    with pytest.raises(CommandError, match="nothing exported: audit chain broken at seq 3: hash mismatch") as excinfo:
        export(bundle, "--tenant", "acme")
    assert excinfo.value.returncode == 1
    assert list(tmp_path.iterdir()) == []  # no bundle, no partial file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tenant", "nobody"], "no tenant 'nobody'"),
        (["--from", "yesterday"], "--from must be an ISO-8601 time"),
        (["--to", "2026-01-01T00:00:00"], "--to needs a time zone"),
    ],
)
def test_it_refuses_bad_options(world, tmp_path, args, message):
    with pytest.raises(CommandError, match=message):
        export(tmp_path / "x.jsonl", *args)


# --- tampering ---------------------------------------------------------------------------------------------------


@pytest.fixture
def bundle(world, tmp_path) -> Path:
    path = tmp_path / "all.jsonl"
    export(path)
    return path


@pytest.fixture
def acme_bundle(world, tmp_path) -> Path:
    path = tmp_path / "acme.jsonl"
    export(path, "--tenant", "acme")
    return path


def test_a_changed_data_value_fails_naming_the_event(bundle, key_file):
    records = lines_of(bundle)
    at = index_of(records, 3)
    records[at]["data"]["role"] = "viewer"
    write_lines(bundle, records)

    done = verify_offline(bundle, key_file)

    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == (
        "bundle verification failed at seq 3: tampered body: the event's content does not match its hash"
    )


@pytest.mark.parametrize(
    "change",
    [
        {"action": "member.removed"},
        {"actor_label": "mallory"},
        {"tenant_id": None},
        {"at": "2020-01-01T00:00:00.000000+00:00"},
        {"data": {"role": 1.5}},  # a float never hashes: refused, not a crash
        {"target_id": 3},
    ],
    ids=lambda change: next(iter(change)),
)
def test_any_changed_field_fails_naming_the_event(bundle, key_file, change):
    records = lines_of(bundle)
    records[index_of(records, 3)].update(change)
    error = failure(write_lines(bundle, records), key_file)
    assert (error.seq, error.kind) == (3, "tampered body")


def test_a_dropped_event_fails_naming_it(bundle, key_file):
    records = lines_of(bundle)
    del records[index_of(records, 3)]
    done = verify_offline(write_lines(bundle, records), key_file)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "bundle verification failed at seq 3: broken link: seq 4 follows seq 2: an event was removed, added or moved"
    )


def test_reordered_events_fail_naming_the_first_out_of_place(bundle, key_file):
    records = lines_of(bundle)
    at = index_of(records, 3)
    records[at], records[at + 1] = records[at + 1], records[at]
    error = failure(write_lines(bundle, records), key_file)
    assert (error.seq, error.kind) == (3, "broken link")
    assert "seq 4 follows seq 2" in str(error)


def test_a_rehashed_event_breaks_the_next_link(bundle, key_file):
    records = lines_of(bundle)
    event = records[index_of(records, 3)]
    event["data"]["role"] = "viewer"
    event["hash"] = event_hash({**event, "at": datetime.fromisoformat(event["at"])})
    error = failure(write_lines(bundle, records), key_file)
    assert (error.seq, error.kind) == (4, "broken link")


def test_a_changed_checkpoint_signature_fails(bundle, key_file):
    records = lines_of(bundle)
    checkpoint = records[-2]
    checkpoint["signature"] = audit_signer().sign(b"something else")
    done = verify_offline(write_lines(bundle, records), key_file)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"bundle verification failed at seq {checkpoint['seq']}: bad signature: "
        "the checkpoint's signature does not verify"
    )


def test_a_checkpoint_moved_to_another_event_fails(bundle, key_file):
    records = lines_of(bundle)
    checkpoint = records.pop(-2)
    records.insert(index_of(records, 3) + 1, checkpoint)
    error = failure(write_lines(bundle, records), key_file)
    assert (error.seq, error.kind) == (checkpoint["seq"], "broken link")


def test_a_bundle_forged_with_another_key_fails(bundle, key_file, tmp_path):
    """The forger changes an event, re-hashes the chain after it, and signs checkpoint and seal with their key."""
    forger = Signer.of(Ed25519PrivateKey.generate())
    records = lines_of(bundle)
    records[0] |= {"key_id": forger.key_id, "public_key": forger.public_key_pem}
    prev = None
    for record_ in records[1:-2]:
        if prev is not None:
            record_["prev_hash"] = prev
        if record_["seq"] == 3:
            record_["data"]["role"] = "viewer"
        record_["hash"] = prev = event_hash({**record_, "at": datetime.fromisoformat(record_["at"])})
    checkpoint = records[-2]
    at = datetime.fromisoformat(checkpoint["at"])
    assert prev is not None
    checkpoint |= {"hash": prev, "key_id": forger.key_id}
    checkpoint["signature"] = forger.sign_checkpoint(seq=checkpoint["seq"], hash_=prev, at=at)
    forged = write_lines(bundle, reseal(records, forger))
    forger_key = tmp_path / "forger.pem"
    forger_key.write_text(forger.public_key_pem)
    assert verify_offline(forged, forger_key).returncode == 0  # consistent: only the key gives it away

    done = verify_offline(forged, key_file)

    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"bundle verification failed at seq {checkpoint['seq']}: bad signature: "
        f"the checkpoint is signed by key {forger.key_id}, not by {audit_signer().key_id}"
    )


def test_a_link_record_pointed_at_a_forged_event_fails_on_the_seal(acme_bundle, key_file):
    """Why bundles are sealed: a link record's hash cannot be recomputed without its event, so a forger could
    change a selected event, re-hash it and point the next link record at it; the chain alone would not see it."""
    records = lines_of(acme_bundle)
    at = next(i for i, r in enumerate(records) if r.get("type") == "event" and records[i + 1].get("type") == "link")
    event = records[at]
    event["data"]["role"] = "viewer"
    event["hash"] = event_hash({**event, "at": datetime.fromisoformat(event["at"])})
    records[at + 1]["prev_hash"] = event["hash"]
    error = failure(write_lines(acme_bundle, records), key_file)
    assert error.kind == "tampered body"
    assert "not the ones sealed at export" in str(error)


def test_a_dropped_checkpoint_leaves_the_events_uncovered(bundle, key_file):
    records = lines_of(bundle)
    del records[-2]
    error = failure(write_lines(bundle, reseal(records, audit_signer())), key_file)
    assert (error.seq, error.kind) == (1, "uncovered")


def test_a_bundle_cut_short_fails(bundle, key_file):
    records = lines_of(bundle)
    error = failure(write_lines(bundle, records[:-1]), key_file)
    assert error.kind == "uncovered"
    assert "without its seal" in str(error)
    error = failure(write_lines(bundle, records[:-3]), key_file)
    assert error.kind == "uncovered"


def test_a_changed_header_fails_on_the_seal(bundle, key_file):
    records = lines_of(bundle)
    records[0]["filter"]["tenant"] = "globex"
    error = failure(write_lines(bundle, records), key_file)
    assert "not the ones sealed at export" in str(error)


def test_a_line_added_after_the_seal_fails(bundle, key_file):
    raw = bundle.read_bytes()
    assert verify_in_process(bundle, key_file)
    bundle.write_bytes(raw + raw.splitlines(keepends=True)[1])
    error = failure(bundle, key_file)
    assert "follows the seal" in str(error)


def test_unreadable_input_exits_2(bundle, key_file, tmp_path):
    assert verify_offline(tmp_path / "missing.jsonl", key_file).returncode == 2
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"not json\n")
    done = verify_offline(garbage, key_file)
    assert done.returncode == 2
    assert "line 1 is not JSON" in done.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"format": "something else"}\n')
    assert verify_offline(other, key_file).returncode == 2
    bad_key = tmp_path / "bad.pem"
    bad_key.write_text("not a key")
    done = verify_offline(bundle, bad_key)
    assert done.returncode == 2
    assert "cannot read the public key" in done.stderr


def test_the_key_may_be_the_apis_json_answer(api, bundle, tmp_path):
    answer = tmp_path / "audit-key.json"
    answer.write_bytes(api().get("/api/v1/compliance/audit-key").content)
    assert verify_offline(bundle, answer).returncode == 0


def test_the_verifier_imports_no_django():
    code = "import sys, compliance.domain.verify; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr


# --- the database walk -------------------------------------------------------------------------------------------


def test_the_walk_streams_in_chunks(world, monkeypatch):
    monkeypatch.setattr(selectors, "_PG_COPY_ROWS", 2)  # PostgreSQL: one COPY per two events
    total = AuditEvent.objects.count()
    assert [row[0] for row in chain_rows()] == list(range(1, total + 1))
    assert [row[0] for row in chain_rows(3, 6)] == [3, 4, 5, 6]
    assert audit_chain_verify().count == total


def bulk_chain(count: int) -> None:
    """``count`` chained events written in bulk (as audit_record would chain them), and the head moved."""
    prev, events, now = GENESIS_HASH, [], datetime.now(UTC)
    for seq in range(1, count + 1):
        fields = {
            "seq": seq,
            "at": now,
            "actor_type": "system",
            "actor_id": "system",
            "actor_label": "bulk",
            "api_key_prefix": "",
            "tenant_id": None,
            "action": "bulk.event",
            "target_type": "thing",
            "target_id": str(seq),
            "data": {"padding": "x" * 200},
            "prev_hash": prev,
        }
        prev = event_hash(fields)
        events.append(AuditEvent(**fields, hash=prev))
    AuditEvent.objects.bulk_create(events, batch_size=2000)
    AuditChainHead.objects.update_or_create(id=1, defaults={"seq": count, "hash": prev})


def test_a_walk_stopped_early_leaves_the_transaction_usable(db):
    """A verification that fails early stops reading while PostgreSQL is still sending rows; cancelling that COPY
    would abort the caller's transaction, so the walk reads the rest of its chunk instead."""
    bulk_chain(20_000)
    assert audit_chain_verify().ok
    tamper_update(3, data={"padding": "y"})

    result = audit_chain_verify()

    assert (result.ok, result.bad_seq) == (False, 3)
    assert AuditEvent.objects.count() == 20_000  # the transaction still answers
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


DB_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)  # jsonb refuses NUL
DB_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | DB_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(DB_TEXT, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(DB_TEXT, DB_JSON, max_size=4))
def test_any_data_exports_and_verifies(db, tmp_path_factory, data):
    record("anything", data=data)
    path = tmp_path_factory.mktemp("bundle") / "all.jsonl"
    export(path)
    key = path.with_name("key.pem")
    key.write_text(audit_signer().public_key_pem)
    assert verify_in_process(path, key).startswith(f"{AuditEvent.objects.count()} events")
