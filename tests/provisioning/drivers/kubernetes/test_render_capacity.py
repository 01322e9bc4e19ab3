"""Capacity classes in what the Kubernetes driver renders (docs/capacity.md): spot work's objects carry their class,
its pods tolerate nodes kept for spot and get the notice as their grace period (SIGTERM at the notice, the kill at
the deadline), its workload knows the notice from its environment, and every Kueue-managed gang names its class's
WorkloadPriorityClass. On-demand work renders as before."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.shapes import AllocationShape
from tests.provisioning.drivers.kubernetes.test_render import by_kind, node, one, shape, whole
from tests.provisioning.drivers.kubernetes.test_render_jobs import gang
from tests.support import k8s_schemas as schemas

CONTAINER = shape(301, "container", "whole_gpu", whole(1, range(2)), (node(1),))
VM = shape(302, "vm", "whole_gpu", whole(2, range(1)), (node(2),), security="vm")
JOB = gang(303, "torchrun")


def spot(placed: AllocationShape) -> AllocationShape:
    """The shape bought as spot, with a notice of 45 s."""
    return replace(placed, capacity_class="spot", notice_seconds=45)


TOLERATION = {"key": "ladder.io/capacity-class", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}


def pods(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every pod spec rendered: a Pod's, a Job's template, a VM's instance template."""
    found = [o["spec"] for o in by_kind(objs, "Pod")]
    found += [o["spec"]["template"]["spec"] for o in by_kind(objs, "Job")]
    found += [o["spec"]["template"]["spec"] for o in by_kind(objs, "VirtualMachine")]
    return found


@pytest.mark.parametrize("placed", [CONTAINER, VM, JOB], ids=["container", "vm", "job"])
def test_spot_work_tolerates_spot_nodes_and_gets_its_notice_as_grace(placed):
    objs = render.allocation_objects(spot(placed))
    schemas.validate_all(objs)
    (spec,) = pods(objs)
    assert spec["tolerations"] == [TOLERATION]
    assert spec["terminationGracePeriodSeconds"] == 45
    for o in objs:
        if o["metadata"].get("labels", {}).get("ladder.io/allocation"):
            assert o["metadata"]["labels"]["ladder.io/capacity-class"] == "spot"


def test_a_spot_workload_knows_its_notice_from_its_environment():
    (spec,) = pods(render.allocation_objects(spot(CONTAINER)))
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert env["LADDER_CAPACITY_CLASS"] == "spot"
    assert env["LADDER_PREEMPTION_NOTICE_SECONDS"] == "45"


def test_a_gang_names_its_class_priority_for_kueue():
    spot_job = one(render.allocation_objects(spot(JOB)), "Job")
    assert spot_job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "ladder-spot"
    assert spot_job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 45  # not the members' usual 300
    on_demand = one(render.allocation_objects(JOB), "Job")
    assert on_demand["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "ladder-on-demand"
    assert on_demand["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 300


@pytest.mark.parametrize("placed", [CONTAINER, VM], ids=["container", "vm"])
def test_on_demand_work_renders_without_any_of_it(placed):
    objs = render.allocation_objects(placed)
    (spec,) = pods(objs)
    assert "tolerations" not in spec
    assert all("ladder.io/capacity-class" not in o["metadata"].get("labels", {}) for o in objs)
    names = {e["name"] for c in spec.get("containers", []) for e in c.get("env", [])}
    assert "LADDER_PREEMPTION_NOTICE_SECONDS" not in names
