"""The job rung's frameworks at the workload's rules: which rung takes which, what each launcher needs, and that a
Slurm cluster's login node is reached over SSH."""

from __future__ import annotations

import pytest

from provisioning.domain.os_images import os_catalog
from provisioning.domain.workload_access import access
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, workload_check
from provisioning.domain.workloads import Checkpoint, Port, Workload

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def check(w: Workload, rung: str = "job") -> None:
    workload_check(w, rung=rung, registries=DEFAULT_REGISTRIES, os_images=os_catalog())


def refused(w: Workload, rung: str = "job") -> tuple[str, str]:
    with pytest.raises(WorkloadInvalid) as caught:
        check(w, rung)
    return caught.value.field, caught.value.message


def test_each_framework_runs_what_its_launcher_can_start() -> None:
    check(Workload(image=IMAGE, command=("torchrun", "train.py")))
    check(Workload(image=IMAGE, command=("python", "train.py"), framework="mpi"))
    check(Workload(image="docker.io/rayproject/ray:2.49.0-gpu", command=("python", "tune.py"), framework="ray"))
    check(Workload(framework="slurm", ssh_keys=(1,)))  # the nodes default to Slinky's slurmd image
    check(Workload(image="ghcr.io/org/slurmd-pytorch:1", framework="slurm", ssh_keys=(1,)))


def test_a_framework_other_than_torchrun_is_the_job_rungs() -> None:
    assert refused(Workload(image=IMAGE, command=("x",), framework="mpi"), "container") == (
        "framework",
        "The mpi framework runs on the job rung, not container.",
    )
    assert refused(Workload(image=IMAGE, framework="horovod"))[0] == "framework"


def test_mpi_and_ray_need_the_program_they_launch() -> None:
    assert refused(Workload(image=IMAGE, framework="mpi")) == (
        "command",
        "An mpi job needs a command: the program mpirun starts on every rank.",
    )
    assert refused(Workload(image=IMAGE, framework="ray"))[0] == "command"


def test_a_slurm_cluster_takes_what_its_users_submit_with_sbatch() -> None:
    assert refused(Workload(framework="slurm", command=("srun", "x")))[0] == "command"
    assert refused(Workload(framework="slurm", checkpoint=Checkpoint()))[0] == "checkpoint"
    assert refused(Workload(framework="slurm", ports=(Port(8888),)))[0] == "ports"
    assert refused(Workload(framework="slurm")) == (
        "ssh_keys",
        "A Slurm cluster is used through its login node: name your SSH keys.",
    )


def test_only_a_slurm_clusters_login_node_takes_ssh_keys_on_the_job_rung() -> None:
    field, message = refused(Workload(image=IMAGE, command=("x",), ssh_keys=(1,)))
    assert field == "ssh_keys"
    assert "a Slurm cluster's login node does" in message
    slurm = access(
        allocation_id=9,
        tenant="acme",
        rung="job",
        hall="h1",
        workload=Workload(framework="slurm", ssh_keys=(1,)),
        base_domain="gpu.example",
        ssh_port=22,
        endpoint_url=None,
        console_url=None,
    )
    assert slurm.ssh is not None
    assert slurm.ssh.command == "ssh ldr-9@ssh.h1.gpu.example"


def test_the_framework_reads_back_and_an_old_workload_is_torchrun() -> None:
    w = Workload(image=IMAGE, command=("python", "x.py"), framework="ray")
    assert Workload.from_json(w.to_json()) == w
    stored = Workload(image=IMAGE).to_json()
    del stored["framework"]  # stored before frameworks existed
    assert Workload.from_json(stored).framework == "torchrun"
