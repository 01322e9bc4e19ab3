"""A job's pods without a GPU (an MPI launcher, a Ray head and submitter, a Slurm controller and login node) are
placed as such: together on one node of the members' model and hall, a node the members filled first, taken and
given back with the members, and a job whose side pods fit nowhere beside it is refused whole."""

from __future__ import annotations

import pytest

from provisioning.domain.placement.decision import HostTake, Placement, Refused, Request
from provisioning.domain.placement.engine import POLICIES, PlacementEngine
from provisioning.domain.placement.isolation import HallInfo, Reason
from provisioning.domain.rungs import FRAMEWORKS, Framework, Rung
from tests.provisioning.domain.placement.test_host import CPU, GIB, H100, HALL, fleet, policy, used

LAUNCHER = FRAMEWORKS[Framework.MPI].side_host  # 1 CPU, 2 GiB


def job(gpus: int, gang: int, cores: int, side: tuple[int, int] = LAUNCHER) -> Request:
    return Request(
        rung=Rung.JOB,
        models=(H100,),
        gpus=gpus,
        gang_size=gang,
        cpu_milli=cores * CPU,
        memory_mib=64 * GIB,
        side_cpu_milli=side[0],
        side_memory_mib=side[1],
    )


def test_the_table_says_what_each_framework_runs_beside_its_members() -> None:
    assert FRAMEWORKS[Framework.TORCHRUN].side_host == (0, 0)
    assert LAUNCHER == (1 * CPU, 2 * GIB)
    assert FRAMEWORKS[Framework.RAY].side_host == (2500, 9 * GIB)  # the head and the submitter
    assert [p.role for p in FRAMEWORKS[Framework.SLURM].side_pods] == ["slurmctld", "login"]


@pytest.mark.parametrize("engine_policy", POLICIES)
def test_side_pods_go_on_a_node_the_members_filled_not_one_with_gpus_free(engine_policy: str) -> None:
    e = PlacementEngine(fleet((8, 64, 1024), (8, 64, 1024), (8, 64, 1024)), engine_policy)
    got = e.place(job(8, 2, cores=48), policy())
    assert isinstance(got, Placement)
    members = {d.node_id for d in got.devices}
    assert len(members) == 2
    assert got.side is not None
    assert got.side.node_id in members
    assert (got.side.cpu_milli, got.side.memory_mib) == LAUNCHER
    assert got.takes == (*got.host, got.side)
    assert used(e.state)[got.side.node_id] == (49 * CPU, 66 * GIB)  # 48 cores and 64 GiB a member, and the launcher


def test_side_pods_go_beside_when_the_members_left_their_nodes_no_cpu() -> None:
    e = PlacementEngine(fleet((8, 48, 1024), (8, 48, 1024), (8, 64, 1024)))
    got = e.place(job(8, 1, cores=48), policy())
    assert isinstance(got, Placement)
    (member,) = {d.node_id for d in got.devices}
    assert got.side is not None
    assert got.side.node_id != member
    assert used(e.state)[got.side.node_id] == LAUNCHER


def test_a_job_whose_side_pods_fit_nowhere_is_refused_and_takes_nothing() -> None:
    e = PlacementEngine(fleet((8, 48, 1024), (8, 48, 1024)))
    assert isinstance(e.place(job(8, 1, cores=48, side=(0, 0)), policy()), Placement)  # node 1 or 2, its CPU all
    refused = e.place(job(8, 1, cores=48), policy())
    assert isinstance(refused, Refused)
    assert refused.code is Reason.NO_CAPACITY
    assert "1 CPUs and 2048 MiB beside them" in refused.message
    assert sorted(used(e.state).values()) == [(0, 0), (48 * CPU, 64 * GIB)]  # the members were given back
    assert sum(g.free for n in e.state.nodes.values() for g in n.gpus) == 8


def test_a_hall_without_room_beside_the_members_gives_way_to_one_with_room() -> None:
    state = fleet((8, 48, 1024))
    state.add_hall(HallInfo("eu-west-1b", "eu-west", "EU", None))
    state.add_node(
        id=2,
        hostname="node-2",
        hall="eu-west-1b",
        model=H100,
        gpu_uuids=[f"GPU-2-{g}" for g in range(8)],
        nvlink_domain="nvl-1",
        cpu_milli=64 * CPU,
        memory_mib=1024 * GIB,
    )
    got = PlacementEngine(state).place(job(8, 1, cores=48), policy())
    assert isinstance(got, Placement)
    assert {d.node_id for d in got.devices} == {2}
    assert got.side == HostTake(2, *LAUNCHER)


def test_release_and_apply_give_back_and_take_the_side_pods_too() -> None:
    e = PlacementEngine(fleet((8, 64, 1024), (8, 64, 1024)))
    got = e.place(job(8, 1, cores=8, side=FRAMEWORKS[Framework.RAY].side_host), policy())
    assert isinstance(got, Placement)
    taken = used(e.state)
    e.release(got)
    assert set(used(e.state).values()) == {(0, 0)}
    e.apply(got)
    assert used(e.state) == taken
    assert HALL in e.state.halls


def test_side_pods_stay_on_the_jobs_own_nodes_before_another_tenants_full_one() -> None:
    e = PlacementEngine(fleet((8, 64, 1024), (8, 64, 1024)))
    other = e.place(job(8, 1, cores=8, side=(0, 0)), policy(2))
    assert isinstance(other, Placement)
    assert {d.node_id for d in other.devices} == {1}  # node 1 is full of another tenant's GPUs, with cores left
    got = e.place(job(8, 1, cores=8), policy(1))
    assert isinstance(got, Placement)
    assert got.side == HostTake(2, *LAUNCHER)
