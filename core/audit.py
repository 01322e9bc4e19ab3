"""The audit record: every service that changes something appends an event here, in its own transaction.

The chain (``core/domain/chain.py``) makes the log tamper-evident; ``compliance`` verifies it, signs checkpoints and
exports bundles. ``tenant`` is the tenant the change concerns (any model instance with a ``pk``), or none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from core.actor import Actor
from core.domain.chain import canonical_json, event_hash
from core.locks import lock_singleton
from core.models import AuditChainHead, AuditEvent
from core.sql import InsertStatement

# The head moves in plain SQL, like the lock taken on it (``lock_singleton``): every audited change does both.
_HEAD = AuditChainHead._meta.db_table


def _move_chain_head(seq: int, hash_: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_HEAD} SET seq = %s, hash = %s WHERE id = 1", [seq, hash_])  # noqa: S608


def _fields(
    actor: Actor, action: str, target_type: str, target_id: Any, tenant: Model | None, data: Any
) -> dict[str, Any]:
    return {
        "actor_type": actor.type,
        "actor_id": actor.id,
        "actor_label": actor.label,
        "api_key_prefix": actor.api_key_prefix,
        "tenant_id": tenant.pk if tenant is not None else None,
        "action": action,
        "target_type": target_type,
        "target_id": str(target_id),
        # Store exactly what is hashed (a JSON round trip turns tuples into lists); canonical_json refuses floats.
        "data": json.loads(canonical_json(data or {})),
    }


def _require_transaction() -> None:
    if not connection.in_atomic_block:
        raise RuntimeError("audit events must be written inside the transaction of the change they record")


def audit_record(
    *,
    actor: Actor,
    action: str,
    target_type: str,
    target_id: Any,
    tenant: Model | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain. Must run inside the transaction of the change it records."""
    _require_transaction()
    fields = _fields(actor, action, target_type, target_id, tenant, data)
    head_seq, head_hash = lock_singleton(AuditChainHead, "seq", "hash")
    fields.update(seq=head_seq + 1, at=timezone.now(), prev_hash=head_hash)  # stamped in chain order
    event = AuditEvent(**fields, hash=event_hash(fields))
    if connection.vendor == "postgresql":
        _append(event)
    else:
        event.save(force_insert=True)
        _move_chain_head(event.seq, event.hash)
    return event


def _append(event: AuditEvent) -> None:
    """Insert the event and move the head to it in one statement. The chain's rules hold as with two: the head
    is locked (read above, ``FOR NO KEY UPDATE``) until the transaction ends, the event links to the head it read, and
    both writes commit or roll back together; what changes is one round trip and no statement compiled by the
    ORM, on the path of every audited change."""
    insert = InsertStatement()
    insert.insert("e", event, refs={}, returning="seq")
    move = f"UPDATE {_HEAD} SET seq = %s, hash = %s WHERE id = 1 RETURNING (SELECT seq FROM e)"  # noqa: S608
    insert.execute(move, [event.seq, event.hash])
    event._state.adding = False


def audit_record_many(
    *,
    actor: Actor,
    action: str,
    target_type: str,
    tenant: Model | None,
    entries: Sequence[tuple[Any, dict[str, Any]]],
) -> int:
    """Append one event per ``(target_id, data)`` entry under a single lock of the head, in one bulk insert: the
    same chain as as many ``audit_record`` calls (each event its own hash and link), at the cost of one. For
    changes made in batches (a retention sweep shredding thousands of assets), so each keeps its own evidence."""
    _require_transaction()
    if not entries:
        return 0
    events = [_fields(actor, action, target_type, target_id, tenant, data) for target_id, data in entries]
    head_seq, head_hash = lock_singleton(AuditChainHead, "seq", "hash")
    rows = []
    at = timezone.now()
    for fields in events:
        head_seq += 1
        fields.update(seq=head_seq, at=at, prev_hash=head_hash)
        head_hash = event_hash(fields)
        rows.append(AuditEvent(**fields, hash=head_hash))
    AuditEvent.objects.bulk_create(rows, batch_size=1000)
    _move_chain_head(head_seq, head_hash)
    return len(rows)
