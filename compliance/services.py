"""Writes to the audit log. Every service that changes something records it here, in its own transaction."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.utils import timezone

from compliance.actor import Actor
from compliance.chain import canonical_json, event_hash
from compliance.models import AuditChainHead, AuditEvent
from tenancy.models import Tenant


def _lock_chain_head() -> AuditChainHead:
    try:
        return AuditChainHead.objects.select_for_update().get(id=1)
    except AuditChainHead.DoesNotExist:  # the very first event: make the row, then lock it
        AuditChainHead.objects.get_or_create(id=1)
        return AuditChainHead.objects.select_for_update().get(id=1)


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
    head = _lock_chain_head()
    fields: dict[str, Any] = {
        "seq": head.seq + 1,
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
        "prev_hash": head.hash,
    }
    event = AuditEvent.objects.create(**fields, hash=event_hash(fields))
    head.seq, head.hash = event.seq, event.hash
    head.save(update_fields=["seq", "hash"])
    return event
