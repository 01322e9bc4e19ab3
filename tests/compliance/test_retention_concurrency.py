"""Two retention sweeps running at once (PostgreSQL) never process an asset twice, and a hold placed while a
sweep runs is never overtaken by it."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from compliance.models import AssetState, DataAsset
from compliance.selectors import audit_chain_verify
from compliance.services.assets import AssetScope
from compliance.services.holds import legal_hold_create
from compliance.services.sweep import retention_sweep
from core.models import AuditEvent
from tests.support import SYSTEM
from tests.support.data import T0, asset, regions

WAIT = timedelta(days=7)


def run_together(*jobs):
    """Run each job in its own thread and database connection, released together; re-raise the first error."""
    start, errors, results = threading.Barrier(len(jobs)), [], [None] * len(jobs)

    def one(i, job):
        try:
            start.wait()
            results[i] = job()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sweeps_never_process_an_asset_twice(acme, globex):
    regions()
    for tenant in (acme, globex):
        for i in range(120):
            asset(tenant, category=("job_log", "dataset")[i % 2], at=T0 - timedelta(days=400 + i))
    now = T0
    first, second = run_together(*(lambda: retention_sweep(now=now, batch=25) for _ in range(2)))
    assert sum(first.scheduled.values()) + sum(second.scheduled.values()) == 240
    scheduled = Counter(
        AuditEvent.objects.filter(action="data_asset.shred_scheduled").values_list("target_id", flat=True)
    )
    assert len(scheduled) == 240
    assert set(scheduled.values()) == {1}
    first, second = run_together(*(lambda: retention_sweep(now=now + WAIT, batch=25) for _ in range(2)))
    assert sum(first.shredded.values()) + sum(second.shredded.values()) == 240
    shredded = Counter(AuditEvent.objects.filter(action="data_asset.shredded").values_list("target_id", flat=True))
    assert len(shredded) == 240
    assert set(shredded.values()) == {1}
    assert set(DataAsset.objects.values_list("state", flat=True)) == {AssetState.SHREDDED}
    assert audit_chain_verify().ok


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_hold_placed_during_a_sweep_is_never_overtaken(acme):
    regions()
    for i in range(300):
        asset(acme, category="job_log", at=T0 - timedelta(days=400 + i))
    retention_sweep(now=T0)  # all 300 are counting down

    def hold():
        return legal_hold_create(
            tenant=acme,
            matter="late",
            reason="placed mid-sweep",
            scope=AssetScope(categories=["job_log"]),
            lock_until=None,
            actor=SYSTEM,
            now=T0 + WAIT,
        )

    run_together(lambda: retention_sweep(now=T0 + WAIT, batch=10), hold)
    states = Counter(DataAsset.objects.values_list("state", flat=True))
    # Whatever the sweep shredded before the hold committed is gone; nothing is left counting down under it,
    # and everything the hold saw is live again.
    assert states[AssetState.SHREDDING] == 0
    assert states[AssetState.SHREDDED] + states[AssetState.LIVE] == 300
    hold_at = AuditEvent.objects.get(action="legal_hold.created").seq
    late = AuditEvent.objects.filter(action="data_asset.shredded", seq__gt=hold_at)
    assert not late.exists()
