"""The audit log in the database: services append linked events, and ``manage.py audit_verify`` names the bad seq."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.db.models import F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compliance.selectors import audit_chain_verify
from core.audit import audit_record
from core.domain.chain import GENESIS_HASH, HASHED_FIELDS, event_hash
from core.models import AuditChainHead, AuditEvent
from lifecycle.services.customers import tenant_signup
from tenancy.domain.roles import StaffRole, TenantRole
from tenancy.models import ApiKeyScope
from tenancy.services import api_key_create, member_invite, staff_user_create
from tests.support import SYSTEM
from tests.support.audit_tamper import tamper_delete, tamper_update


def signup(slug: str = "acme", username: str = "alice"):
    return tenant_signup(
        slug=slug, name=slug.title(), username=username, email=f"{username}@{slug}.test", password="pw", actor=SYSTEM
    )


@pytest.fixture
def three_events(db):
    """tenant.created and member.added for acme, then staff.created: seq 1 to 3."""
    signup()
    staff_user_create(username="compliance", role=StaffRole.COMPLIANCE, password="pw", actor=SYSTEM)
    return list(AuditEvent.objects.order_by("seq"))


def record(action: str, data: dict | None = None) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=SYSTEM, action=action, target_type="thing", target_id=1, data=data)


def verify_command() -> str:
    out = StringIO()
    call_command("audit_verify", stdout=out)
    return out.getvalue()


def broken_command() -> CommandError:
    with pytest.raises(CommandError) as excinfo:
        call_command("audit_verify", stdout=StringIO())
    assert excinfo.value.returncode == 1
    return excinfo.value


# --- writing -----------------------------------------------------------------------------------------------------


def test_it_records_a_signup_as_two_linked_events(db):
    tenant = signup()
    created, added = AuditEvent.objects.order_by("seq")
    assert (created.seq, created.action, created.target_id) == (1, "tenant.created", str(tenant.pk))
    assert (added.seq, added.action) == (2, "member.added")
    assert created.prev_hash == GENESIS_HASH
    assert added.prev_hash == created.hash
    assert created.tenant == added.tenant == tenant
    assert (created.actor_type, created.actor_id, created.actor_label) == ("system", "system", "tests")
    assert created.data == {"slug": "acme", "name": "Acme"}
    assert added.data == {"username": "alice", "role": TenantRole.OWNER}


def test_it_keeps_seq_gapless_and_linked_across_services(db):
    acme = signup()
    signup("globex", "charlie")
    alice = acme.memberships.get().user
    member_invite(
        tenant=acme, actor_role=TenantRole.OWNER, username="bob", email="bob@acme.test", role="member", actor=SYSTEM
    )
    api_key_create(user=alice, name="ci", scopes=[ApiKeyScope.READ], expires_at=None, actor=SYSTEM)
    staff_user_create(username="finance", role=StaffRole.FINANCE, password="pw", actor=SYSTEM)

    rows = list(AuditEvent.objects.order_by("seq").values(*HASHED_FIELDS, "hash"))

    assert [row["seq"] for row in rows] == list(range(1, 8))
    assert [row["prev_hash"] for row in rows] == [GENESIS_HASH] + [row["hash"] for row in rows[:-1]]
    assert all(event_hash(row) == row["hash"] for row in rows)
    head = AuditChainHead.objects.get()
    assert (head.seq, head.hash) == (7, rows[-1]["hash"])
    key_event = AuditEvent.objects.get(action="api_key.created")
    assert key_event.tenant == acme
    assert key_event.data["owner"] == "alice"


def test_it_leaves_no_gap_when_the_change_rolls_back(db):
    signup()

    def failing_change() -> None:
        with transaction.atomic():
            audit_record(actor=SYSTEM, action="doomed", target_type="thing", target_id=1)
            raise RuntimeError("the change failed after its event was written")

    with pytest.raises(RuntimeError, match="the change failed"):
        failing_change()
    event = record("survivor")

    assert event.seq == 3
    assert not AuditEvent.objects.filter(action="doomed").exists()
    assert list(AuditEvent.objects.values_list("seq", flat=True)) == [1, 2, 3]
    assert audit_chain_verify().ok


@pytest.mark.django_db(transaction=True)
def test_it_refuses_to_record_outside_a_transaction(transactional_db):
    # transactional_db, not only the marker: the conftest's version lets the flush afterwards past the trigger.
    with pytest.raises(RuntimeError, match="inside the transaction"):
        audit_record(actor=SYSTEM, action="loose", target_type="thing", target_id=1)
    assert not AuditEvent.objects.exists()
    assert not AuditChainHead.objects.filter(seq__gt=0).exists()


def test_it_refuses_floats_and_writes_nothing(db):
    signup()
    with pytest.raises(ValueError, match="no floats"), transaction.atomic():
        record("ratio", {"fraction": 0.25})
    assert AuditEvent.objects.count() == 2
    assert audit_chain_verify().ok


def test_it_catches_an_event_inserted_past_the_head(db):
    signup()
    last = AuditEvent.objects.get(seq=2)
    forged = {
        f: getattr(last, f)
        for f in (
            "at",
            "actor_type",
            "actor_id",
            "actor_label",
            "api_key_prefix",
            "tenant_id",
            "action",
            "target_type",
            "target_id",
            "data",
        )
    }
    forged.update(seq=3, prev_hash=last.hash)
    AuditEvent.objects.create(**forged, hash=event_hash(forged))
    result = audit_chain_verify()
    assert not result.ok
    assert result.bad_seq == 3
    assert "past the chain head" in (result.reason or "")


JSON_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=10)  # jsonb refuses NUL
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(JSON_TEXT, JSON, max_size=5))
def test_it_verifies_any_json_data_as_read_back(db, data):
    event = record("anything", data)
    assert AuditEvent.objects.get(seq=event.seq).data == event.data
    result = audit_chain_verify()
    assert result.ok, result.describe()
    assert result.count == event.seq


# --- manage.py audit_verify --------------------------------------------------------------------------------------


def test_it_reports_an_empty_log_as_intact(db):
    assert verify_command() == "audit chain ok: 0 events\n"


def test_it_reports_an_intact_chain(three_events):
    assert verify_command() == "audit chain ok: 3 events\n"


@pytest.mark.parametrize(
    "changes",
    [
        {"data": {"slug": "acme", "name": "Evil Corp"}},
        {"action": "member.removed"},
        {"actor_label": "mallory"},
        {"at": F("at") + timedelta(microseconds=1)},
        {"tenant": None},
        {"target_id": "999"},
    ],
    ids=lambda changes: next(iter(changes)),
)
def test_it_names_an_event_whose_content_changed(three_events, changes):
    tamper_update(2, **changes)
    error = broken_command()
    assert str(error) == "audit chain broken at seq 2: hash mismatch: the event's content was changed"


def test_it_names_a_removed_event(three_events):
    tamper_delete(2)
    assert str(broken_command()).startswith("audit chain broken at seq 2: gap: expected seq 2, found 3")


def test_it_catches_the_last_event_removed(three_events):
    tamper_delete(3)
    assert str(broken_command()).startswith("audit chain broken at seq 3: truncated")


def test_it_catches_an_event_rehashed_by_the_forger(three_events):
    row = AuditEvent.objects.filter(seq=1).values(*HASHED_FIELDS).get()
    row["data"] = {"slug": "acme", "name": "Evil Corp"}
    tamper_update(1, data=row["data"], hash=event_hash(row))
    assert str(broken_command()).startswith("audit chain broken at seq 2: broken link")


def test_it_catches_a_changed_prev_hash(three_events):
    tamper_update(3, prev_hash="f" * 64)
    assert str(broken_command()).startswith("audit chain broken at seq 3: broken link")
