"""A node's host in the fleet: stated by a fleet document (or imported from a Kubernetes node's status), checked,
stored, and read by placement as the CPU and memory it sells beside the GPUs (provisioning/domain/node_host.py)."""

from __future__ import annotations

from typing import Any

import pytest

from core.actor import Actor
from provisioning.domain.fleet_document import check, format_path
from provisioning.drivers.kubernetes.sync import host_entry
from provisioning.fleet_cache import FLEET, placement_section
from provisioning.models import Node
from provisioning.services.fleet import fleet_load
from tests.support.fleet_documents import DELETE, changed, small_fleet

ACTOR = Actor.system("tests")
NODE = "regions.0.halls.0.nodes.0"
WHERE = "regions[0].halls[0].nodes[0].host"
HOST = {"cpu_cores": 192, "memory_gib": 2048, "reserved_cpu_cores": 8, "reserved_memory_gib": 64}


def with_host(host: Any) -> dict[str, Any]:
    return changed(small_fleet(), f"{NODE}.host", host)


@pytest.mark.django_db
def test_a_stated_host_is_stored_and_placement_sells_it_less_its_reserve() -> None:
    fleet_load(document=with_host(HOST), actor=ACTOR)
    node = Node.objects.get(hostname="euw1a-01")
    assert (node.cpu_cores, node.memory_gib, node.reserved_cpu_cores, node.reserved_memory_gib) == (192, 2048, 8, 64)
    assert Node.objects.get(hostname="euw1a-02").host is None  # not stated: not tracked
    FLEET.invalidate()
    with placement_section():
        state = FLEET.state
    slot = state.nodes[node.pk]
    assert (slot.cpu_milli, slot.memory_mib) == (184_000, 1984 * 1024)
    assert state.nodes[Node.objects.get(hostname="euw1a-02").pk].cpu_milli == 0
    assert state.tracks_host
    # stated again, unchanged: nothing written; dropped: untracked again
    assert fleet_load(document=with_host(HOST), actor=ACTOR).as_dict()["nodes"]["unchanged"] == 5
    fleet_load(document=small_fleet(), actor=ACTOR)
    assert Node.objects.get(hostname="euw1a-01").host is None


@pytest.mark.parametrize(
    ("host", "where", "message"),
    [
        ({"cpu_cores": 0, "memory_gib": 64}, "cpu_cores", "must be 1 to 4096, not 0"),
        ({"cpu_cores": 96.5, "memory_gib": 64}, "cpu_cores", "must be a whole number, not 96.5"),
        ({"cpu_cores": "96", "memory_gib": 64}, "cpu_cores", "must be a whole number, not a string"),
        ({"cpu_cores": 96}, "memory_gib", "is required"),
        ({"cpu_cores": 96, "memory_gib": 64, "reserved_cpu_cores": 96}, "reserved_cpu_cores", "at least one of its"),
        ({"cpu_cores": 96, "memory_gib": 64, "reserved_memory_gib": -1}, "reserved_memory_gib", "must be 0 to"),
        ({"cpu_cores": 96, "memory_gib": 64, "cores": 2}, "cores", "unknown field"),
        ([96, 64], "", "must be an object or null, not an array"),
    ],
)
def test_a_bad_host_is_named_by_its_path(host: Any, where: str, message: str) -> None:
    spec, reasons = check(with_host(host))
    assert spec is None
    found = {format_path(r.path): r.message for r in reasons}
    key = f"{WHERE}.{where}" if where else WHERE
    assert message in found[key], found
    assert len(found) == 1, found


def test_a_null_or_absent_host_is_not_tracked() -> None:
    for document in (with_host(None), changed(with_host(HOST), f"{NODE}.host", DELETE)):
        spec, reasons = check(document)
        assert reasons == []
        assert spec is not None
        assert next(n for _, n in spec.nodes()).host is None


@pytest.mark.parametrize(
    ("status", "host"),
    [
        (
            {"capacity": {"cpu": "192", "memory": "2113536Mi"}, "allocatable": {"cpu": "185500m", "memory": "2039Gi"}},
            {"cpu_cores": 192, "memory_gib": 2064, "reserved_cpu_cores": 7, "reserved_memory_gib": 25},
        ),
        ({"capacity": {"cpu": "8", "memory": "32Gi"}, "allocatable": {"cpu": "8", "memory": "32Gi"}},
         {"cpu_cores": 8, "memory_gib": 32, "reserved_cpu_cores": 0, "reserved_memory_gib": 0}),
        ({"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}, None),
        ({}, None),
        ({"capacity": {"cpu": "lots", "memory": "1Gi"}, "allocatable": {"cpu": "1", "memory": "1Gi"}}, None),
    ],
)  # fmt: skip
def test_an_imported_nodes_host_is_its_capacity_and_the_kubelets_reserve(status: Any, host: Any) -> None:
    assert host_entry(status) == host
