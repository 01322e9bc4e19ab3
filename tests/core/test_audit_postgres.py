"""The audit log on PostgreSQL: the append-only trigger, concurrent appends, and tampering behind the trigger."""

from __future__ import annotations

import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from compliance.selectors import audit_chain_verify
from core.audit import audit_record
from core.models import AuditEvent
from tests.support import SYSTEM

# Transactional tests below request ``transactional_db`` as well as carrying the marker: the conftest's version
# of that fixture is what lets the flush after the test past the TRUNCATE trigger.


def _run(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


def _snapshot() -> list[tuple]:
    return list(AuditEvent.objects.order_by("seq").values_list("seq", "action", "data", "hash"))


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("operation", "statement"),
    [
        ("UPDATE", lambda: AuditEvent.objects.filter(seq=1).update(action="tenant.deleted")),
        ("UPDATE", lambda: _run("UPDATE compliance_auditevent SET data = '{}'::jsonb")),
        ("DELETE", lambda: AuditEvent.objects.filter(seq=2).delete()),
        ("DELETE", lambda: _run("DELETE FROM compliance_auditevent")),
        ("TRUNCATE", lambda: _run("TRUNCATE compliance_auditevent")),
    ],
    ids=["orm-update", "sql-update", "orm-delete", "sql-delete", "truncate"],
)
def test_it_refuses_to_change_or_remove_events(acme, operation, statement):
    before = _snapshot()
    # Run the deferred foreign-key checks of the events acme just wrote: with them pending, PostgreSQL would
    # refuse TRUNCATE for that reason before the trigger had its say.
    _run("SET CONSTRAINTS ALL IMMEDIATE")

    refused = f"append-only: {operation} on compliance_auditevent refused"
    with pytest.raises(DatabaseError, match=refused), transaction.atomic():
        statement()

    assert _snapshot() == before
    assert len(before) == 2
    assert audit_chain_verify().ok


@pytest.mark.postgres
def test_it_still_appends_with_the_trigger_on(acme):
    with transaction.atomic():
        event = audit_record(actor=SYSTEM, action="tenant.noted", target_type="tenant", target_id=acme.pk)
    assert event.seq == 3
    assert audit_chain_verify().count == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_keeps_one_gapless_chain_under_concurrent_writers(transactional_db):
    threads, per_thread = 8, 25
    before = AuditEvent.objects.count()
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                with transaction.atomic():
                    audit_record(
                        actor=SYSTEM, action="load.write", target_type="worker", target_id=worker, data={"i": i}
                    )
        except BaseException as exc:  # reported by the main thread's assertion
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=write, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert errors == []
    new = list(AuditEvent.objects.filter(seq__gt=before).order_by("seq").values_list("seq", "target_id", "data"))
    assert [seq for seq, _, _ in new] == list(range(before + 1, before + threads * per_thread + 1))
    for n in range(threads):
        # Each worker's events are all there, once each, in the order it wrote them.
        assert [data["i"] for _, worker, data in new if worker == str(n)] == list(range(per_thread))
    result = audit_chain_verify()
    assert result.ok, result.describe()
    assert result.count == before + threads * per_thread


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_it_reports_no_false_break_when_verifying_during_appends(transactional_db):
    stop, writing = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            while not stop.is_set():
                with transaction.atomic():
                    audit_record(actor=SYSTEM, action="load.write", target_type="worker", target_id=0)
                writing.set()
        except BaseException as exc:  # reported by the main thread's assertion
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=write) for _ in range(4)]
    for worker in workers:
        worker.start()
    try:
        assert writing.wait(timeout=30)
        results = [audit_chain_verify() for _ in range(100)]
    finally:
        stop.set()
        for worker in workers:
            worker.join()

    assert errors == []
    assert [r.describe() for r in results if not r.ok] == []
    counts = [r.count for r in results]
    assert counts == sorted(counts)
    assert counts[-1] > counts[0]  # the writers really were appending while the chain was walked
    assert audit_chain_verify().count == AuditEvent.objects.count()


@pytest.mark.postgres
def test_it_fails_verification_for_a_row_altered_behind_the_triggers_back(acme, compliance):
    assert call_command("audit_verify", stdout=StringIO()) is None
    _run("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE waits for no pending foreign-key checks
    _run("ALTER TABLE compliance_auditevent DISABLE TRIGGER audit_event_no_update_delete")
    _run("""UPDATE compliance_auditevent SET data = '{"username": "mallory", "role": "owner"}' WHERE seq = 2""")
    _run("ALTER TABLE compliance_auditevent ENABLE TRIGGER audit_event_no_update_delete")

    with pytest.raises(CommandError) as excinfo:
        call_command("audit_verify", stdout=StringIO())

    assert excinfo.value.returncode == 1
    assert str(excinfo.value) == "audit chain broken at seq 2: hash mismatch: the event's content was changed"
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():  # the trigger is back on
        AuditEvent.objects.filter(seq=2).update(data={})
