"""An allocation's workload, typed: what modules ask of it (framework, Slurm, SSH, dirty hosts, namespace) is
answered by ``WorkloadSpec`` from the table of rungs, from the stored form or a parsed workload alike."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.domain.rungs import Framework, Rung
from provisioning.domain.workloads import Checkpoint, Workload, WorkloadSpec, workload_spec
from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tests.provisioning.test_slurm_hosts import slurm_cluster
from tests.support import SYSTEM
from tests.support.fleet_documents import node, small_fleet

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def test_a_slurm_cluster_from_its_stored_form() -> None:
    spec = workload_spec("job", Workload(framework="slurm", ssh_keys=(3,)).to_json())
    assert (spec.rung, spec.framework, spec.is_slurm) == (Rung.JOB, Framework.SLURM, True)
    assert (spec.takes_ssh, spec.leaves_host_dirty, spec.whole_hosts) == (True, True, True)
    assert spec.namespace_suffix == "-slurm"
    assert spec.workload == Workload(framework="slurm", ssh_keys=(3,))


def test_a_job_without_a_workload_is_a_torchrun_gang_without_ssh() -> None:
    spec = workload_spec("job", None)
    assert (spec.workload, spec.framework, spec.is_slurm, spec.takes_ssh) == (None, Framework.TORCHRUN, False, False)
    assert spec.restarts_from_checkpoint
    assert spec.checkpoint is None


def test_ssh_needs_a_rung_that_offers_it_and_keys() -> None:
    keys = Workload(image=IMAGE, ssh_keys=(1,))
    assert WorkloadSpec.of("container", keys).takes_ssh
    assert not WorkloadSpec.of("container", Workload(image=IMAGE)).takes_ssh
    assert not WorkloadSpec.of("serverless", keys).takes_ssh
    assert not WorkloadSpec.of("job", keys).takes_ssh  # only a Slurm cluster's login node, on the job rung


def test_other_rungs_have_no_framework_and_bare_metal_leaves_its_hosts_dirty() -> None:
    metal = workload_spec("bare_metal", Workload(os_image="ubuntu-24.04").to_json())
    assert (metal.framework, metal.is_slurm, metal.boots_os, metal.leaves_host_dirty) == (None, False, True, True)
    vm = workload_spec("vm", {"os_image": "ubuntu-24.04"})
    assert (vm.framework, vm.leaves_host_dirty, vm.namespace_suffix) == (None, False, "")


def test_a_jobs_checkpoint_reads_back_typed() -> None:
    stored = Workload(image=IMAGE, command=("x",), checkpoint=Checkpoint(interval_s=120)).to_json()
    assert workload_spec("job", stored).checkpoint == Checkpoint(interval_s=120)


@pytest.fixture
def two_hosts(db: Any) -> None:
    document = small_fleet()
    document["regions"][0]["halls"][0]["nodes"] = [node(f"h{i}", "eu-west-1a/nvl-0") for i in range(1, 3)]
    fleet_load(document=document, actor=SYSTEM)


def test_an_allocation_answers_through_its_workload_spec(api: Any, alice: Any, two_hosts: None) -> None:
    cluster = slurm_cluster(api(alice))
    spec = Allocation.objects.get(pk=cluster["id"]).workload_spec
    assert (spec.framework, spec.is_slurm, spec.takes_ssh, spec.leaves_host_dirty) == (
        Framework.SLURM,
        True,
        True,
        True,
    )
    assert spec.workload is not None
    assert len(spec.workload.ssh_keys) == 1
