"""Reads of the audit log, and the fast walk of its chain.

``audit_chain_verify`` checks what ``core.domain.chain.verify`` checks, with the same results and messages, ~3x
faster (``bench/compliance/chain.py``): rows are tuples, not dicts; each event's canonical encoding is spelled by one
template (``compliance.domain.verify.canonical_event``, checked against ``chain.event_hash`` by the tests, which also
decides whenever the two disagree); on PostgreSQL the rows stream through binary ``COPY ... TO STDOUT`` with the
times spelled by the server, so the client builds no datetime; elsewhere the ORM streams them in chunks. Memory
stays flat however long the chain is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Q, TextField
from django.db.models.functions import Cast

from compliance.domain.verify import canonical_event
from compliance.models import AssetState, AuditCheckpoint, DataAsset
from core.domain.chain import GENESIS_HASH, HASHED_FIELDS, VerifyResult, check_head, event_hash, format_time
from core.models import AuditChainHead, AuditEvent
from core.progress import QUIET, Progress

# A walked row: HASHED_FIELDS in order, then the stored hash; ``at`` is already spelled (chain.format_time) and
# ``data`` is the stored JSON text.
Row = tuple[Any, ...]
SEQ, AT, TENANT_ID, DATA, PREV_HASH, HASH = 0, 1, 6, 10, 11, 12
_WALKED = (*HASHED_FIELDS, "hash")
if [_WALKED[i] for i in (SEQ, AT, TENANT_ID, DATA, PREV_HASH, HASH)] != [
    "seq",
    "at",
    "tenant_id",
    "data",
    "prev_hash",
    "hash",
]:
    raise ImportError("compliance.selectors' rows no longer match core.domain.chain.HASHED_FIELDS")
_loads = json.JSONDecoder().decode


def encode_row(row: Row) -> str:
    """The canonical encoding of a walked row (``compliance.domain.verify.canonical_event``)."""
    seq, at, actor_type, actor_id, actor_label, prefix, tenant_id, action, target_type, target_id = row[:DATA]
    return canonical_event(
        seq,
        at,
        actor_type,
        actor_id,
        actor_label,
        prefix,
        tenant_id,
        action,
        target_type,
        target_id,
        _loads(row[DATA]),
        row[PREV_HASH],
    )


def row_hash(row: Row) -> str | None:
    """The hash of a walked row: the fast encoding, and ``chain.event_hash`` (the authority) when that disagrees
    with the stored hash. None when the row cannot be hashed at all (a float in its data, a wrong type)."""
    try:
        fast = hashlib.sha256(encode_row(row).encode("utf-8")).hexdigest()
        if fast == row[HASH]:
            return fast
    except (TypeError, ValueError):
        pass
    try:
        fields = dict(zip(HASHED_FIELDS, row, strict=False))
        fields["at"], fields["data"] = datetime.fromisoformat(row[AT]), json.loads(row[DATA])
        return event_hash(fields)
    except (TypeError, ValueError):
        return None


# --- walking rows ------------------------------------------------------------------------------------------------

_TABLE = AuditEvent._meta.db_table
_COLUMNS = {f.attname: str(f.column) for f in AuditEvent._meta.concrete_fields}
# Binary COPY types of the walked columns; ``at`` and ``data`` arrive as text spelled by the server.
_PG_SELECT = ", ".join(
    f"to_char({_COLUMNS[name]} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')"
    if name == "at"
    else f"{_COLUMNS[name]}::int8"
    if name in ("seq", "tenant_id")
    else f"{_COLUMNS[name]}::text"
    for name in (*HASHED_FIELDS, "hash")
)
_PG_TYPES = ["int8", "text", *["text"] * 4, "int8", *["text"] * 6]
# Rows per COPY statement: a walk that stops early reads the rest of one statement's rows, not of the chain
# (cancelling a COPY instead would abort the caller's transaction).
_PG_COPY_ROWS = 100_000


def _pg_rows(lo: int, hi: int | None) -> Generator[Row, None, None]:
    last = hi if hi is not None else AuditEvent.objects.aggregate(last=Max("seq"))["last"] or 0
    with connection.cursor() as cursor:
        raw: Any = cursor.cursor
        for start in range(lo, last + 1, _PG_COPY_ROWS):
            end = min(start + _PG_COPY_ROWS - 1, last)
            query = f"SELECT {_PG_SELECT} FROM {_TABLE} WHERE seq BETWEEN {start:d} AND {end:d} ORDER BY seq"  # noqa: S608
            with raw.copy(f"COPY ({query}) TO STDOUT (FORMAT BINARY)") as copy:
                copy.set_types(_PG_TYPES)
                try:
                    yield from copy.rows()
                except GeneratorExit:
                    while copy.read():
                        pass
                    raise


def _orm_rows(lo: int, hi: int | None, chunk_size: int) -> Generator[Row, None, None]:
    events = AuditEvent.objects.filter(seq__gte=lo).order_by("seq")
    if hi is not None:
        events = events.filter(seq__lte=hi)
    columns = ["data_text" if name == "data" else name for name in (*HASHED_FIELDS, "hash")]
    rows = events.annotate(data_text=Cast("data", TextField())).values_list(*columns).iterator(chunk_size=chunk_size)
    for row in rows:
        at: datetime = row[AT]
        yield (row[0], format_time(at), *row[2:])


def chain_rows(lo: int = 1, hi: int | None = None, *, chunk_size: int = 5000) -> Generator[Row, None, None]:
    """Events ``lo..hi`` (inclusive) in seq order as walked rows, streamed."""
    if connection.vendor == "postgresql":
        return _pg_rows(lo, hi)
    return _orm_rows(lo, hi, chunk_size)


# --- verification ------------------------------------------------------------------------------------------------


def verify_rows(rows: Iterator[Row], *, head: tuple[int, str] | None = None) -> VerifyResult:
    """``core.domain.chain.verify`` over walked rows: the same checks, in the same order, with the same reasons."""
    expected_seq = 1
    prev_hash = GENESIS_HASH
    count = 0
    sha256 = hashlib.sha256
    for row in rows:
        seq = row[SEQ]
        if seq != expected_seq:
            return VerifyResult(False, count, expected_seq, f"gap: expected seq {expected_seq}, found {seq}")
        if row[PREV_HASH] != prev_hash:
            return VerifyResult(False, count, seq, "broken link: prev_hash does not match the previous event")
        try:
            recomputed: str | None = sha256(encode_row(row).encode("utf-8")).hexdigest()
        except (ValueError, TypeError):
            recomputed = None
        if recomputed != row[HASH] and row_hash(row) != row[HASH]:
            return VerifyResult(False, count, seq, "hash mismatch: the event's content was changed")
        prev_hash = row[HASH]
        expected_seq += 1
        count += 1
    return check_head(count, prev_hash, head)


def _head() -> tuple[int, str] | None:
    return AuditChainHead.objects.filter(id=1).values_list("seq", "hash").first()


def audit_chain_verify(*, progress: Progress = QUIET) -> VerifyResult:
    """The chain up to its head, checked; ``progress`` counts the events walked (``core/progress.py``)."""
    head = _head()
    progress.set_total(head[0] if head else 0)
    # Walk only the events the head covers: appends committed after the head was read would otherwise count as
    # extra events and be reported as a truncation that never happened.
    result = verify_rows(progress.track(chain_rows(1, head[0] if head else None)), head=head)
    progress.finish()
    if not result.ok:
        return result
    # Events past that head are genuine only if a later head covers them; one inserted behind the services'
    # back never moves the head.
    last_seq = AuditEvent.objects.aggregate(last=Max("seq"))["last"] or 0
    head_now = _head()
    if last_seq > (head_now[0] if head_now else 0):
        bad = (head_now[0] if head_now else 0) + 1
        return VerifyResult(False, result.count, bad, "unrecorded event: it lies past the chain head")
    return result


def changes_of(data: Any) -> list[dict[str, Any]]:
    """What an event changed, read from its ``data`` by the product's two conventions: ``{"<field>": {"old": ..,
    "new": ..}}`` (updates) and ``{"from": .., "to": ..}`` (state transitions). Other events (creations,
    removals) record what they made or removed in ``data`` itself, and list no changes here."""
    if not isinstance(data, dict):
        return []
    changes = [
        {"field": name, "old": value["old"], "new": value["new"]}
        for name, value in data.items()
        if isinstance(value, dict) and value.keys() == {"old", "new"}
    ]
    if "from" in data and "to" in data:
        changes.append({"field": "state", "old": data["from"], "new": data["to"]})
    return changes


def audit_checkpoint_latest() -> AuditCheckpoint | None:
    return AuditCheckpoint.objects.order_by("-seq").first()


# --- for the metrics scrape (cheap reads by primary key or index, never a write) ----------------------------------


@dataclass(frozen=True)
class CheckpointLag:
    head_seq: int  # the chain head's seq (0: an empty log)
    checkpoint_seq: int  # the last signed checkpoint's seq (0: none yet)
    checkpoint_at: datetime | None  # when it was signed
    first_uncovered_at: datetime | None  # the oldest event no checkpoint covers yet (None: all covered)


def audit_checkpoint_lag() -> CheckpointLag:
    """How far the signed checkpoints trail the audit chain: three reads by key (the head row, the last
    checkpoint by its unique seq, the first event after it by its primary key)."""
    head = AuditChainHead.objects.filter(id=1).values_list("seq", flat=True).first() or 0
    last = AuditCheckpoint.objects.order_by("-seq").values_list("seq", "at").first()
    seq, signed_at = last if last is not None else (0, None)
    uncovered = None
    if head > seq:
        uncovered = AuditEvent.objects.filter(seq=seq + 1).values_list("at", flat=True).first()
    return CheckpointLag(head_seq=head, checkpoint_seq=seq, checkpoint_at=signed_at, first_uncovered_at=uncovered)


def shredding_backlog(*, now: datetime) -> dict[str, int]:
    """Assets in their waiting period before shredding, and those of them already due (the sweep has yet to
    shred them); one aggregate over the ``(state, shred_after)`` index."""
    counts = DataAsset.objects.filter(state=AssetState.SHREDDING).aggregate(
        waiting=Count("id"), due=Count("id", filter=Q(shred_after__lte=now))
    )
    return {"waiting": counts["waiting"] or 0, "due": counts["due"] or 0}
