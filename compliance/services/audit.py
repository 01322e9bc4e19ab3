"""The audit chain as compliance officers use it: signed checkpoints (``audit_checkpoint_take``) and the export of
bundles that verify offline (``audit_export`` to a file, ``audit_export_stream`` as chunks of bytes for a streamed
download). Events are appended by ``core.audit``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

from django.db import transaction
from django.utils import timezone

from compliance.domain.verify import BUNDLE_FORMAT, BUNDLE_VERSION, checkpoint_payload, signature_valid
from compliance.models import AuditCheckpoint
from compliance.selectors import AT, DATA, HASH, PREV_HASH, SEQ, TENANT_ID, Row, chain_rows, encode_row, row_hash
from compliance.signing import Signer, audit_signer
from core.actor import Actor
from core.audit import audit_record
from core.domain.chain import GENESIS_HASH, HASHED_FIELDS, format_time
from core.locks import lock_singleton
from core.models import AuditChainHead, AuditEvent
from core.progress import QUIET, Progress
from tenancy.models import Tenant

# --- signed checkpoints ------------------------------------------------------------------------------------------

CHECKPOINT_ACTION = "audit.checkpoint"
CHECKPOINT_ACTOR = Actor.system("audit-checkpoint")


def audit_checkpoint_take(*, actor: Actor | None = None) -> AuditCheckpoint | None:
    """Sign the chain head (Ed25519) and store it; None while the chain is empty.

    Idempotent: when the head has not moved since the last checkpoint, that checkpoint is returned and nothing is
    written. Otherwise one event ``audit.checkpoint`` (who asked, which key, the previous checkpoint) is appended
    first, in the same transaction under the head's lock, and the checkpoint signs the head *including* it: the
    chain itself then shows every checkpoint taken (a deleted checkpoint row is noticed), and since the checkpoint
    writes no event after signing, the head it leaves is the head it signed; taking another at once, or on the next
    beat of an idle system, changes nothing. Nothing is verified here (cheap): ``audit_chain_verify`` does that.
    """
    signer = audit_signer()  # a bad key fails before anything is written
    with transaction.atomic():
        head_seq, _ = lock_singleton(AuditChainHead, "seq", "hash")
        if head_seq == 0:
            return None
        current = AuditCheckpoint.objects.filter(seq=head_seq).first()
        if current is not None:
            return current
        previous = AuditCheckpoint.objects.order_by("-seq").values_list("seq", flat=True).first()
        event = audit_record(
            actor=actor or CHECKPOINT_ACTOR,
            action=CHECKPOINT_ACTION,
            target_type="audit_checkpoint",
            target_id=head_seq + 1,
            data={"key_id": signer.key_id, "previous_checkpoint": previous},
        )
        at = timezone.now()
        signature = signer.sign_checkpoint(seq=event.seq, hash_=event.hash, at=at)
        return AuditCheckpoint.objects.create(
            seq=event.seq, hash=event.hash, at=at, key_id=signer.key_id, signature=signature
        )


# --- bundles -----------------------------------------------------------------------------------------------------

EXPORT_ACTOR = Actor.system("audit-export")


class AuditExportError(Exception):
    """The chain in the database fails a check while being exported; nothing usable was written."""

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


@dataclass
class AuditExportReport:
    events: int = 0
    links: int = 0
    checkpoints: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    filter: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        span = f" (seq {self.first_seq}..{self.last_seq})" if self.first_seq is not None else ""
        return f"exported {self.events} events, {self.links} links, {self.checkpoints} checkpoints{span}"


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


# Lines gathered before a chunk is handed on: large enough that a chunk is cheap, small enough that memory stays
# flat (a line is a few hundred bytes).
_CHUNK_LINES = 100


class _BundleWriter:
    """Gathers lines into chunks and keeps the SHA-256 the seal signs."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.digest = hashlib.sha256()

    def write(self, line: bytes) -> None:
        self.digest.update(line)
        self.pending.append(line)

    def take(self) -> bytes:
        chunk = b"".join(self.pending)
        self.pending.clear()
        return chunk


def _selection(tenant: Tenant | None, since: datetime | None, until: datetime | None) -> Any:
    events = AuditEvent.objects.all()
    if tenant is not None:
        events = events.filter(tenant=tenant)
    if since is not None:
        events = events.filter(at__gte=since)
    if until is not None:
        events = events.filter(at__lt=until)
    return events


def _covering_checkpoint(last: int) -> AuditCheckpoint:
    covering = AuditCheckpoint.objects.filter(seq__gte=last).order_by("seq").first()
    if covering is None:
        covering = audit_checkpoint_take(actor=EXPORT_ACTOR)
    if covering is None or covering.seq < last:  # the head is behind an exported event: the chain is broken
        raise AuditExportError(f"no checkpoint can cover seq {last}: it lies past the chain head", last)
    return covering


def audit_export(
    out: BinaryIO,
    *,
    tenant: Tenant | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    chunk_size: int = 5000,
    progress: Progress = QUIET,
) -> AuditExportReport:
    """Write a bundle of the events selected (a tenant's; ``since <= at < until``) to ``out``: the chunks of
    ``audit_export_stream``, in order. ``AuditExportError`` as there (the caller discards what was written)."""
    report = AuditExportReport()
    chunks = audit_export_stream(
        tenant=tenant, since=since, until=until, chunk_size=chunk_size, report=report, progress=progress
    )
    for chunk in chunks:
        out.write(chunk)
    progress.finish()
    return report


def audit_export_stream(
    *,
    tenant: Tenant | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    chunk_size: int = 5000,
    report: AuditExportReport | None = None,
    progress: Progress = QUIET,
) -> Generator[bytes, None, None]:
    """A bundle of the events selected (a tenant's; ``since <= at < until``), as chunks of bytes; see
    ``compliance.domain.verify`` for the format. Streamed: memory does not grow with the number of events. ``report``,
    when given, is filled in as the bundle is made.

    The bundle ends at the first checkpoint at or after the last selected event (one is taken when there is none
    yet), and holds every event from the first selected one to there: in full when selected, as a link record
    otherwise. On the way, every one of those events is checked against its content and its predecessor, and each
    checkpoint against its signature: a bundle is only sealed over a chain that verified. ``AuditExportError``
    names the first bad seq otherwise; what was handed on by then has no seal, and no verifier accepts it.
    """
    signer = audit_signer()
    report = report if report is not None else AuditExportReport()
    report.filter = {
        "tenant": tenant.slug if tenant else None,
        "tenant_id": tenant.pk if tenant else None,
        "from": format_time(since) if since else None,
        "to": format_time(until) if until else None,
    }
    writer = _BundleWriter()
    writer.write(
        _line(
            {
                "format": BUNDLE_FORMAT,
                "version": BUNDLE_VERSION,
                "key_id": signer.key_id,
                "public_key": signer.public_key_pem,
                "exported_at": format_time(timezone.now()),
                "filter": report.filter,
            }
        )
    )
    selected = _selection(tenant, since, until)
    last = selected.order_by("-seq").values_list("seq", flat=True).first()
    if last is not None:
        covering = _covering_checkpoint(last)
        # Events the covering checkpoint's own event (or later appends) added to the selection are exported too.
        first = selected.filter(seq__lte=covering.seq).order_by("seq").values_list("seq", flat=True).first() or last
        report.first_seq, report.last_seq = first, covering.seq
        # Read before the rows stream (no other statement can run on the connection during a COPY). Checkpoints
        # are taken hourly: a year of them is a few thousand records.
        checkpoints = _checkpoints(first, covering.seq, signer)
        before = _hash_before(first)
        progress.set_total(covering.seq - first + 1)
        with closing(chain_rows(first, covering.seq, chunk_size=chunk_size)) as rows:
            yield from _write_records(
                writer, progress.track(rows), iter(checkpoints), (first, before), report, tenant, since, until
            )
    counts = {"events": report.events, "links": report.links, "checkpoints": report.checkpoints}
    sha256 = writer.digest.hexdigest()
    seal = signer.sign_seal(sha256=sha256, **counts)
    writer.write(_line({"type": "seal", **counts, "sha256": sha256, "key_id": signer.key_id, "signature": seal}))
    yield writer.take()


def _checkpoints(first: int, last: int, signer: Signer) -> list[dict[str, Any]]:
    records = []
    for seq, hash_, at, key_id, signature in (
        AuditCheckpoint.objects.filter(seq__gte=first, seq__lte=last)
        .order_by("seq")
        .values_list("seq", "hash", "at", "key_id", "signature")
    ):
        spelled = format_time(at)
        # Checkpoints signed with an earlier key are exported as they are; the current key checks its own.
        if key_id == signer.key_id:
            payload = checkpoint_payload(seq=seq, hash_=hash_, at=spelled, key_id=key_id)
            if not signature_valid(signer.public_key, signature, payload):
                raise AuditExportError(f"the checkpoint of seq {seq} has a bad signature", seq)
        records.append(
            {"type": "checkpoint", "seq": seq, "hash": hash_, "at": spelled, "key_id": key_id, "signature": signature}
        )
    return records


def _write_records(
    writer: _BundleWriter,
    rows: Iterator[Row],
    checkpoints: Iterator[dict[str, Any]],
    expected: tuple[int, str],
    report: AuditExportReport,
    tenant: Tenant | None,
    since: datetime | None,
    until: datetime | None,
) -> Generator[bytes, None, None]:
    """Check and write the records of ``rows``, handing on a chunk whenever the writer has gathered enough."""
    tenant_id = tenant.pk if tenant is not None else None
    since_at = format_time(since) if since is not None else None  # spelled times of one format sort as times
    until_at = format_time(until) if until is not None else None
    checkpoint = next(checkpoints, None)
    write, sha256, pending = writer.write, hashlib.sha256, writer.pending
    for row in rows:
        seq = row[SEQ]
        if seq != expected[0]:
            raise AuditExportError(f"audit chain broken at seq {expected[0]}: gap: found seq {seq}", expected[0])
        if row[PREV_HASH] != expected[1]:
            raise AuditExportError(f"audit chain broken at seq {seq}: broken link", seq)
        hash_ = row[HASH]
        try:
            encoded = encode_row(row)
            fast = sha256(encoded.encode("utf-8")).hexdigest() == hash_
        except (ValueError, TypeError):
            encoded, fast = "", False
        if not fast and row_hash(row) != hash_:
            raise AuditExportError(f"audit chain broken at seq {seq}: hash mismatch", seq)
        if (
            (tenant_id is None or row[TENANT_ID] == tenant_id)
            and (since_at is None or row[AT] >= since_at)
            and (until_at is None or row[AT] < until_at)
        ):
            if fast:  # the canonical encoding spells every hashed field already: add the record's type and hash
                write(f'{{"type":"event","hash":"{hash_}",{encoded[1:]}\n'.encode())
            else:
                fields = dict(zip(HASHED_FIELDS, row, strict=False))
                write(_line({"type": "event", **fields, "data": json.loads(row[DATA]), "hash": hash_}))
            report.events += 1
        else:
            write(f'{{"type":"link","seq":{seq:d},"prev_hash":"{row[PREV_HASH]}","hash":"{hash_}"}}\n'.encode())
            report.links += 1
        while checkpoint is not None and checkpoint["seq"] <= seq:
            if checkpoint["seq"] == seq:
                if checkpoint["hash"] != hash_:
                    raise AuditExportError(f"the checkpoint of seq {seq} does not match the event", seq)
                write(_line(checkpoint))
                report.checkpoints += 1
            checkpoint = next(checkpoints, None)
        expected = (seq + 1, hash_)
        if len(pending) >= _CHUNK_LINES:
            yield writer.take()
    if expected[0] - 1 != report.last_seq:
        raise AuditExportError(f"audit chain broken: the events end before seq {report.last_seq}", report.last_seq)


def _hash_before(seq: int) -> str:
    if seq == 1:
        return GENESIS_HASH
    previous = AuditEvent.objects.filter(seq=seq - 1).values_list("hash", flat=True).first()
    if previous is None:
        raise AuditExportError(f"audit chain broken at seq {seq - 1}: the event is missing", seq - 1)
    return previous
