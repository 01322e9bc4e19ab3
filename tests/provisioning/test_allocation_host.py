"""An allocation takes its node's CPU and memory beside its GPUs (docs/placement.md, "The whole node"): the rung's
bundle, resolved once into the allocation's spec, placed, read back from the database and the journal alike, and
requested exactly by its rendered pods and VMs."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.domain.node_host import bundle_model, bundled, host_extra
from provisioning.domain.placement.decision import HostTake
from provisioning.domain.rungs import Rung
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.fleet_cache import FLEET, placement_from_json, placement_of, placement_section, placement_to_json
from provisioning.models import Allocation, Node
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, PlacementRefused, allocation_request
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.fleet_documents import node, one_hall

pytestmark = pytest.mark.django_db

H100 = "H100-SXM-80GB"


def one_node(cores: int, gib: int) -> dict[str, Any]:
    host = {"cpu_cores": cores, "memory_gib": gib, "reserved_cpu_cores": 2, "reserved_memory_gib": 8}
    return one_hall(node("n1", "eu-west-1a/nvl-0", host=host))


def place(tenant: Tenant, name: str, rung: str = "container", gpus: int = 2) -> Allocation:
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=gpus)
    return allocation_request(tenant=tenant, name=name, spec=spec, actor=SYSTEM)


def used() -> tuple[int, int]:
    FLEET.invalidate()  # read back from the database, as another process would
    with placement_section():
        slot = FLEET.state.nodes[Node.objects.get(hostname="n1").pk]
        return slot.cpu_used, slot.memory_used


def test_an_allocation_takes_its_rungs_bundle_and_its_pod_requests_exactly_that(acme: Tenant) -> None:
    fleet_load(document=one_node(cores=42, gib=520), actor=SYSTEM)  # 40 cores and 512 GiB sold
    first = place(acme, "a")
    assert (first.spec["cpu_milli"], first.spec["memory_mib"]) == bundled(Rung.CONTAINER, H100, 2) == (16000, 131072)
    assert used() == (16000, 131072)
    pod = next(o for o in render.allocation_objects(allocation_shape(first)) if o["kind"] == "Pod")
    (container,) = [c for c in pod["spec"]["containers"] if "claims" in c["resources"]]
    assert container["resources"]["requests"] == {"cpu": "16", "memory": "128Gi"}
    place(acme, "b")
    assert used() == (32000, 262144)
    with pytest.raises(PlacementRefused) as refused:
        place(acme, "c")  # 4 GPUs free, 8 cores left for 16
    assert refused.value.code == "no_capacity"
    assert Allocation.objects.count() == 2


def test_a_vm_takes_twice_its_gpus_memory_and_boots_with_it(acme: Tenant) -> None:
    fleet_load(document=one_node(cores=66, gib=1032), actor=SYSTEM)
    vm = place(acme, "vm", rung="vm", gpus=2)
    assert (vm.spec["cpu_milli"], vm.spec["memory_mib"]) == (16000, 2 * 160 * 1024)
    machine = next(o for o in render.allocation_objects(allocation_shape(vm)) if o["kind"] == "VirtualMachine")
    domain = machine["spec"]["template"]["spec"]["domain"]
    assert domain["cpu"]["cores"] == 16
    assert domain["resources"]["requests"]["memory"] == "320Gi"


def test_a_vm_naming_several_models_takes_the_bundle_of_the_one_with_the_most_gpu_memory(acme: Tenant) -> None:
    """An H100 VM that would as well take an H200 has twice the H200's memory per GPU wherever it lands, and pays
    nothing beyond the bundle for it."""
    fleet_load(document=one_node(cores=66, gib=1032), actor=SYSTEM)  # an H100 node
    spec = AllocationSpec(rung="vm", gpu_models=(H100, "H200-141GB"), gpus=1)
    vm = allocation_request(tenant=acme, name="vm", spec=spec, actor=SYSTEM)
    assert vm.gpu_model.name == H100
    assert vm.spec["memory_mib"] == 2 * 141 * 1024 == bundled(Rung.VM, "H200-141GB", 1)[1]
    assert host_extra(Rung.VM, bundle_model(spec.gpu_models), 1, vm.spec["cpu_milli"], vm.spec["memory_mib"]) == (0, 0)


def test_the_journal_and_the_database_carry_what_each_node_gave(acme: Tenant) -> None:
    fleet_load(document=one_node(cores=42, gib=520), actor=SYSTEM)
    allocation = place(acme, "a", gpus=4)
    with placement_section():
        placed = FLEET.placements[allocation.pk]
    assert placed.host == (HostTake(Node.objects.get(hostname="n1").pk, 32000, 262144),)
    assert placement_from_json(placement_to_json(placed)) == placed
    assert placement_of(allocation, ()) == placed
    # an allocation placed before hosts were placed kept no CPU in its spec: it takes none when read back, and its
    # pod requests the rung's bundle as pods always did
    Allocation.objects.filter(pk=allocation.pk).update(spec={**allocation.spec, "cpu_milli": 0, "memory_mib": 0})
    allocation.refresh_from_db()
    assert placement_of(allocation, ()).host == ()
    pod = next(o for o in render.allocation_objects(allocation_shape(allocation)) if o["kind"] == "Pod")
    (container,) = [c for c in pod["spec"]["containers"] if "claims" in c["resources"]]
    assert container["resources"]["requests"] == {"cpu": "32", "memory": "256Gi"}
