"""Two requests never get the same GPU: the database refuses a double booking, decisions are serialized (across
threads and across processes), a tenant's quota holds under concurrency, and a process that did not make a
decision learns of it from the journal."""

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from core.models import AuditEvent
from provisioning import fleet_cache
from provisioning.domain.states import AllocationState
from provisioning.models import Allocation, Gpu, GpuClaim
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, PlacementRefused, allocation_request
from provisioning.services.stopping import allocation_stop
from provisioning.services.transitions import allocation_transition
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.fleet_documents import node

H100 = "H100-SXM-80GB"
ONE_GPU = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1)


def one_node_fleet():
    return {
        "regions": [
            {
                "code": "eu-west",
                "name": "EU West",
                "jurisdiction": "EU",
                "halls": [{"code": "eu-west-1a", "fenced_for": None, "nodes": [node("n1", "eu-west-1a/nvl-0")]}],
            }
        ]
    }


def test_the_database_refuses_two_holders_of_one_slice(db, acme):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    allocation = allocation_request(tenant=acme, name="a", spec=ONE_GPU, actor=SYSTEM)
    gpu = Gpu.objects.get(uuid=allocation.devices.get().gpu_uuid)
    with pytest.raises(IntegrityError), transaction.atomic():
        GpuClaim.objects.create(gpu=gpu, slice=3, soft_tenant=acme)


def test_a_process_learns_other_processes_decisions_from_the_journal(db, acme, monkeypatch):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    first, second = fleet_cache.FleetCache(), fleet_cache.FleetCache()
    monkeypatch.setattr(fleet_cache, "FLEET", second)
    allocation_request(tenant=acme, name="warm", spec=ONE_GPU, actor=SYSTEM)  # the second process is now warm
    monkeypatch.setattr(fleet_cache, "FLEET", first)
    seven = AllocationSpec(rung="container", gpu_models=(H100,), gpus=7)
    allocation_request(tenant=acme, name="rest", spec=seven, actor=SYSTEM)  # made by the first process
    monkeypatch.setattr(fleet_cache, "FLEET", second)
    with pytest.raises(PlacementRefused) as refused:
        allocation_request(tenant=acme, name="late", spec=ONE_GPU, actor=SYSTEM)
    assert refused.value.code == "no_capacity"
    assert GpuClaim.objects.count() == 64


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_racers_for_the_last_eight_gpus_get_exactly_eight(acme):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    results: list[str] = []
    start = threading.Barrier(60)

    def race(i: int) -> None:
        try:
            start.wait()
            allocation_request(tenant=acme, name=f"racer-{i}", spec=ONE_GPU, actor=SYSTEM)
            results.append("granted")
        except PlacementRefused as refused:
            results.append(refused.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("granted") == 8
    assert results.count("no_capacity") == 52
    assert GpuClaim.objects.count() == 64
    assert GpuClaim.objects.values("gpu", "slice").distinct().count() == 64


def test_a_fresh_process_rebuilds_every_hold_from_the_database(db, acme, globex):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    bare = AllocationSpec(rung="bare_metal", gpu_models=(H100,), nodes=1)
    allocation_request(tenant=acme, name="metal", spec=bare, actor=SYSTEM)
    fleet_cache.FLEET.invalidate()  # as a newly started process
    with pytest.raises(PlacementRefused) as refused:
        allocation_request(tenant=globex, name="gpu", spec=ONE_GPU, actor=SYSTEM)
    assert refused.value.code == "no_capacity"
    assert fleet_cache.FLEET.state.nodes[next(iter(fleet_cache.FLEET.state.nodes))].holder == acme.pk


def test_a_process_behind_a_pruned_journal_rebuilds_its_fleet(db, acme, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    behind = fleet_cache.FleetCache()
    monkeypatch.setattr(fleet_cache, "FLEET", behind)
    allocation_request(tenant=acme, name="seen", spec=ONE_GPU, actor=SYSTEM)  # this process is now warm
    monkeypatch.setattr(fleet_cache, "FLEET", fleet_cache.FleetCache())
    seven = AllocationSpec(rung="container", gpu_models=(H100,), gpus=7)
    allocation_request(tenant=acme, name="unseen", spec=seven, actor=SYSTEM)  # another process
    assert fleet_cache.journal_prune(older_than=timezone.now() + timedelta(seconds=1)) > 0
    monkeypatch.setattr(fleet_cache, "FLEET", behind)
    stale_decisions = []
    monkeypatch.setattr(behind, "invalidate", lambda: stale_decisions.append(1))
    with pytest.raises(PlacementRefused):
        allocation_request(tenant=acme, name="late", spec=ONE_GPU, actor=SYSTEM)
    assert stale_decisions == []  # it rebuilt before deciding, instead of deciding on a stale fleet


class Processes:
    """Stands in for the module's ``FLEET`` so that racer threads behave as several web processes: each thread
    sees the fleet cache (memory and in-process lock) of the process it was given, and processes learn of each
    other's decisions only through the database (the placement lock row and the journal)."""

    def __init__(self, count: int) -> None:
        object.__setattr__(self, "caches", [fleet_cache.FleetCache() for _ in range(count)])
        object.__setattr__(self, "which", threading.local())

    def enter(self, process: int) -> None:
        self.which.process = process

    def _cache(self) -> fleet_cache.FleetCache:
        return self.caches[getattr(self.which, "process", 0)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cache(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._cache(), name, value)


# Racers on a database connection at once: a test server's connection limit (100 by default) is shared with
# whatever else runs against it; the rest wait at the door, and a racer that got in leaves with its connection.
CONNECTIONS = 40


def _race(racers: int, processes: Processes, tenant: Tenant, spec: AllocationSpec) -> list[str]:
    results: list[str] = []
    start = threading.Barrier(racers)
    door = threading.BoundedSemaphore(CONNECTIONS)

    def race(i: int) -> None:
        processes.enter(i % len(processes.caches))
        start.wait()
        with door:
            try:
                allocation_request(tenant=tenant, name=f"racer-{i}", spec=spec, actor=SYSTEM)
                results.append("granted")
            except PlacementRefused as refused:
                results.append(refused.code)
            finally:
                connection.close()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_hundred_racers_in_four_processes_for_eight_gpus_get_exactly_eight(acme, monkeypatch):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    processes = Processes(4)
    monkeypatch.setattr(fleet_cache, "FLEET", processes)
    results = _race(100, processes, acme, ONE_GPU)
    assert len(results) == 100
    assert results.count("granted") == 8
    assert results.count("no_capacity") == 92
    assert GpuClaim.objects.count() == 64
    assert GpuClaim.objects.values("gpu", "slice").distinct().count() == 64
    assert Allocation.objects.count() == 8
    # Every process, caught up with the journal, holds exactly what the database holds: no decision missed or
    # applied twice, whichever process made it.
    for process in range(4):
        processes.enter(process)
        with fleet_cache.fleet_read() as fleet:
            assert sum(1 for n in fleet.state.nodes.values() for g in n.gpus if not g.free) == 8
            assert fleet.state.tenant_milli[acme.pk] == 8000


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racers_of_a_tenant_at_its_quota_are_not_granted_past_it(acme, monkeypatch):
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    Tenant.objects.filter(pk=acme.pk).update(gpu_quota_milli=3000)
    acme.refresh_from_db()
    processes = Processes(4)
    monkeypatch.setattr(fleet_cache, "FLEET", processes)
    results = _race(40, processes, acme, ONE_GPU)
    # Plenty of GPUs are free: only the quota refuses, and exactly at three GPUs however the decisions interleave.
    assert results.count("granted") == 3
    assert results.count("quota") == 37
    assert sum(Allocation.objects.values_list("quota_milli", flat=True)) == 3000


def test_a_stop_racing_the_driver_is_not_lost(db, acme):
    """The tenant's stop reads ``placed``; the provisioning task moves the allocation to ``provisioning`` before the
    stop's compare-and-swap. The stop follows the move: the allocation is stopping, audited once."""
    fleet_load(document=one_node_fleet(), actor=SYSTEM)
    allocation = allocation_request(tenant=acme, name="raced", spec=ONE_GPU, actor=SYSTEM)
    seen_by_the_stop = Allocation.objects.get(pk=allocation.pk)
    assert seen_by_the_stop.state == AllocationState.PLACED
    assert allocation_transition(allocation=allocation, to=AllocationState.PROVISIONING, actor=SYSTEM)

    answer = allocation_stop(allocation=seen_by_the_stop, actor=SYSTEM)

    assert answer.state == AllocationState.STOPPING
    assert Allocation.objects.get(pk=allocation.pk).state == AllocationState.STOPPING
    stops = AuditEvent.objects.filter(action="allocation.stopping", target_id=str(allocation.pk))
    assert [e.data["from"] for e in stops] == ["provisioning"]
