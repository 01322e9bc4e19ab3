"""A job's pods without a GPU are placed as such (docs/placement.md, "Beside the members"): the node placement took
for them is kept on the allocation, read back from the database and the journal alike, requested exactly and pinned
to by the rendered launcher, and a fault of that node places the job again, side pods included."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.domain.rungs import FRAMEWORKS, Framework
from provisioning.domain.workloads import Workload
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.desired import allocation_shape
from provisioning.fleet_cache import FLEET, placement_from_json, placement_of, placement_section, placement_to_json
from provisioning.models import Allocation, Node
from provisioning.services.fleet import fleet_load, node_fail
from provisioning.services.placing import AllocationSpec, PlacementRefused, allocation_request
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.fleet_documents import node, one_hall

pytestmark = pytest.mark.django_db

H100 = "H100-SXM-80GB"
MPI = Workload(image="ghcr.io/acme/train:1", command=("python", "train.py"), framework="mpi")


def hosts(*names: str) -> dict[str, Any]:
    """8-GPU H100 hosts selling 48 cores and 1 TiB each, in one NVLink domain."""
    host = {"cpu_cores": 50, "memory_gib": 1032, "reserved_cpu_cores": 2, "reserved_memory_gib": 8}
    return one_hall(*(node(name, "eu-west-1a/nvl-0", host=host) for name in names))


def mpi_job(tenant: Tenant, name: str = "train") -> Allocation:
    """One member of 8 GPUs taking all 48 cores of its host: its launcher cannot go there."""
    spec = AllocationSpec(rung="job", gpu_models=(H100,), gpus=8, cpu_milli=48000)
    return allocation_request(tenant=tenant, name=name, spec=spec, actor=SYSTEM, workload=MPI)


def used() -> dict[str, tuple[int, int]]:
    FLEET.invalidate()  # read back from the database, as another process would
    with placement_section():
        return {n.hostname: (n.cpu_used, n.memory_used) for n in FLEET.state.nodes.values()}


def member_host(allocation: Allocation) -> str:
    (hostname,) = {d.hostname for d in allocation.devices.filter(active=True)}
    return hostname


def test_the_launcher_is_placed_beside_the_members_kept_and_rendered_pinned_there(acme: Tenant) -> None:
    fleet_load(document=hosts("n1", "n2"), actor=SYSTEM)
    job = mpi_job(acme)
    member = member_host(job)
    side = job.side_node
    assert side is not None
    assert side.hostname != member
    assert (job.spec["side_cpu_milli"], job.spec["side_memory_mib"]) == FRAMEWORKS[Framework.MPI].side_host
    assert used() == {member: (48000, 512 * 1024), side.hostname: (1000, 2048)}  # the member: 48 cores, 64 GiB a GPU
    placed = placement_of(Allocation.objects.get(pk=job.pk), ())
    assert placed.side is not None
    assert placed.side.node_id == side.pk
    assert placement_from_json(placement_to_json(placed)) == placed
    (mpijob,) = [o for o in render.allocation_objects(allocation_shape(job)) if o["kind"] == "MPIJob"]
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    terms = launcher["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [side.hostname]}]}
    ]
    assert launcher["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"memory": "2Gi"},
    }


def test_a_job_whose_launcher_fits_nowhere_is_refused_and_keeps_nothing(acme: Tenant) -> None:
    fleet_load(document=hosts("n1"), actor=SYSTEM)
    with pytest.raises(PlacementRefused) as refused:
        mpi_job(acme)
    assert refused.value.code == "no_capacity"
    assert "beside them" in str(refused.value)
    assert not Allocation.objects.exists()
    assert used() == {"n1": (0, 0)}


def test_a_fault_of_the_launchers_node_places_the_job_again_with_its_launcher(
    acme: Tenant, django_capture_on_commit_callbacks: Any
) -> None:
    fleet_load(document=hosts("n1", "n2", "n3"), actor=SYSTEM)
    job = mpi_job(acme)
    side = job.side_node
    assert side is not None
    with django_capture_on_commit_callbacks(execute=True):
        node_fail(node=side, actor=SYSTEM, last_checkpoint=SimulatedProvisioner().last_checkpoint)
    job.refresh_from_db()
    assert job.restarts == 1
    assert job.side_node is not None
    assert job.side_node.hostname not in (side.hostname, member_host(job))
    taken = used()
    assert taken[side.hostname] == (0, 0)
    assert taken[job.side_node.hostname] == (1000, 2048)
    assert Node.objects.get(pk=side.pk).state == "failed"
