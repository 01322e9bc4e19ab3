"""Reads of the audit log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Max

from compliance.chain import HASHED_FIELDS, VerifyResult, verify
from compliance.models import AuditChainHead, AuditEvent


def _events_in_order(*, up_to: int | None = None, chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    events = AuditEvent.objects.order_by("seq")
    if up_to is not None:
        events = events.filter(seq__lte=up_to)
    # Server-side cursor on PostgreSQL: memory stays flat however long the chain is.
    return events.values(*HASHED_FIELDS, "hash").iterator(chunk_size=chunk_size)


def _head() -> tuple[int, str] | None:
    return AuditChainHead.objects.filter(id=1).values_list("seq", "hash").first()


def audit_chain_verify() -> VerifyResult:
    head = _head()
    # Walk only the events the head covers: appends committed after the head was read would otherwise count as
    # extra events and be reported as a truncation that never happened.
    result = verify(_events_in_order(up_to=head[0] if head else None), head=head)
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
