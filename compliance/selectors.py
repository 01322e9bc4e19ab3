"""Reads of the audit log."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compliance.chain import HASHED_FIELDS, VerifyResult, verify
from compliance.models import AuditChainHead, AuditEvent


def _events_in_order(chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    # Server-side cursor on PostgreSQL: memory stays flat however long the chain is.
    return AuditEvent.objects.order_by("seq").values(*HASHED_FIELDS, "hash").iterator(chunk_size=chunk_size)


def audit_chain_verify() -> VerifyResult:
    head = AuditChainHead.objects.filter(id=1).values_list("seq", "hash").first()
    return verify(_events_in_order(), head=head)
