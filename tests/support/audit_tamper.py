"""Changing audit events behind the services' back, as someone with database access could, for the tamper tests."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

from core.models import AuditEvent

ROW_TRIGGER = "audit_event_no_update_delete"


@contextmanager
def trigger_off() -> Iterator[None]:
    """On PostgreSQL, switch the append-only row trigger off for the block; elsewhere there is none.

    The ALTERs run in their own atomic block, so a failure inside rolls the trigger back on with everything else.
    """
    with transaction.atomic():
        _set_row_trigger("DISABLE")
        yield
        _set_row_trigger("ENABLE")


def _set_row_trigger(verb: str) -> None:
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        # Events inserted earlier in this transaction still have their deferred foreign-key checks pending, and
        # ALTER TABLE refuses to run while they are; run them now, then defer again as Django's constraints are.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE compliance_auditevent {verb} TRIGGER {ROW_TRIGGER}")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def tamper_update(seq: int, **changes: Any) -> None:
    with trigger_off():
        assert AuditEvent.objects.filter(seq=seq).update(**changes) == 1


def tamper_delete(seq: int) -> None:
    with trigger_off():
        assert AuditEvent.objects.filter(seq=seq).delete()[0] == 1
