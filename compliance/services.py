"""Writes to the audit log. Every service that changes something records it here, in its own transaction."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.utils import timezone

from compliance.actor import Actor
from compliance.chain import canonical_json, event_hash
from compliance.models import AuditChainHead, AuditEvent
from tenancy.locks import lock_singleton
from tenancy.models import Tenant

# The head moves in plain SQL, like the lock taken on it (``lock_singleton``): every audited change does both.
_HEAD = AuditChainHead._meta.db_table


def _move_chain_head(seq: int, hash_: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_HEAD} SET seq = %s, hash = %s WHERE id = 1", [seq, hash_])  # noqa: S608


def audit_record(
    *,
    actor: Actor,
    action: str,
    target_type: str,
    target_id: Any,
    tenant: Tenant | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain. Must run inside the transaction of the change it records."""
    if not connection.in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records")
    # Store exactly what is hashed (a JSON round trip turns tuples into lists); canonical_json refuses floats.
    payload = json.loads(canonical_json(data or {}))
    head_seq, head_hash = lock_singleton(AuditChainHead, "seq", "hash")
    fields: dict[str, Any] = {
        "seq": head_seq + 1,
        "at": timezone.now(),
        "actor_type": actor.type,
        "actor_id": actor.id,
        "actor_label": actor.label,
        "api_key_prefix": actor.api_key_prefix,
        "tenant_id": tenant.pk if tenant is not None else None,
        "action": action,
        "target_type": target_type,
        "target_id": str(target_id),
        "data": payload,
        "prev_hash": head_hash,
    }
    event = AuditEvent.objects.create(**fields, hash=event_hash(fields))
    _move_chain_head(event.seq, event.hash)
    return event
