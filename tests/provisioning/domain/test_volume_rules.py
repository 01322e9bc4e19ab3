"""The rules of a volume request, without a database: names are DNS labels, sizes are bounded whole GB, a volume
grows and never shrinks, and the table of rungs says which rung takes which kind of volume and how."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.os_images import os_catalog
from provisioning.domain.rungs import RUNGS, Rung, rung_facts
from provisioning.domain.volumes import (
    MAX_GB,
    MIN_GB,
    Attach,
    VolumeKind,
    VolumeRuleBroken,
    grow_check,
    kind_check,
    name_check,
    quota_left,
    size_check,
)
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, workload_check
from provisioning.domain.workloads import Volume, Workload

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


@pytest.mark.parametrize("name", ["datasets", "a", "ckpt-2026", "x" * 63, "0models9"])
def test_it_takes_dns_labels(name: str) -> None:
    assert name_check(name) == name


@pytest.mark.parametrize("name", ["", "Data", "-lead", "trail-", "under_score", "x" * 64, "dot.ted", None, 7])
def test_it_refuses_names_that_are_not_dns_labels_naming_the_field(name: object) -> None:
    with pytest.raises(VolumeRuleBroken) as refused:
        name_check(name)
    assert refused.value.field == "name"


@given(st.integers())
def test_a_size_is_a_whole_number_of_gb_within_bounds(size: int) -> None:
    if MIN_GB <= size <= MAX_GB:
        assert size_check(size) == size
    else:
        with pytest.raises(VolumeRuleBroken):
            size_check(size)


@pytest.mark.parametrize("size", [True, 1.5, "10", None])
def test_a_size_is_an_integer_not_a_bool_or_a_string(size: object) -> None:
    with pytest.raises(VolumeRuleBroken):
        size_check(size)


@given(st.integers(MIN_GB, MAX_GB), st.integers(MIN_GB, MAX_GB))
def test_a_volume_only_ever_grows(current: int, asked: int) -> None:
    if asked > current:
        assert grow_check(current, asked) == asked
    else:
        with pytest.raises(VolumeRuleBroken, match=r"shrinks|already"):
            grow_check(current, asked)


def test_kinds_and_quota() -> None:
    assert kind_check("block") is VolumeKind.BLOCK
    with pytest.raises(VolumeRuleBroken):
        kind_check("tape")
    assert quota_left(None, 10_000) is None
    assert quota_left(1000, 600) == 400
    assert quota_left(1000, 1600) == 0


def test_the_table_says_how_each_rung_takes_a_volume() -> None:
    assert RUNGS[Rung.VM].volumes == {VolumeKind.BLOCK: Attach.DISK, VolumeKind.FILESYSTEM: Attach.NETWORK_MOUNT}
    assert RUNGS[Rung.BARE_METAL].volumes == {}  # the tenant's own OS, outside the cluster: it mounts none
    for rung in (Rung.CONTAINER, Rung.JOB, Rung.SERVERLESS):
        assert rung_facts(rung).volumes == {VolumeKind.FILESYSTEM: Attach.MOUNT}
    assert rung_facts(Rung.JOB, "slurm").volumes == {VolumeKind.FILESYSTEM: Attach.MOUNT}
    assert RUNGS[Rung.SERVERLESS].volumes_read_only
    assert RUNGS[Rung.CONFIDENTIAL_VM].volumes == {}
    assert all(row.volumes or row.volumes_refused for row in RUNGS.values())


def _check(rung: str, *volumes: Volume) -> None:
    boots = RUNGS[Rung(rung)].boots_os
    workload = Workload(
        image=None if boots else IMAGE, os_image="ubuntu-24.04" if boots else None, volumes=tuple(volumes)
    )
    workload_check(workload, rung=rung, registries=DEFAULT_REGISTRIES, os_images=os_catalog())


def test_a_workload_entry_names_one_thing_and_serverless_mounts_read_only() -> None:
    _check("container", Volume("/data", volume=1), Volume("/scratch", scratch_gb=10))
    _check("vm", Volume("/mnt/disk", volume=2))
    _check("serverless", Volume("/models", volume=3, read_only=True))
    cases: list[tuple[str, str, tuple[Volume, ...]]] = [
        ("container", "volumes.0", (Volume("/data", volume=1, dataset=2),)),
        ("container", "volumes.1.volume", (Volume("/data", volume=1), Volume("/other", volume=1))),
        ("serverless", "volumes.0.read_only", (Volume("/models", volume=3),)),
        ("confidential_vm", "volumes.0.volume", (Volume("/data", volume=1),)),
        ("vm", "volumes.0", (Volume("/data", scratch_gb=10),)),
        ("container", "volumes.1.mount_path", (Volume("/data", volume=1), Volume("/data/sub", volume=2))),
    ]
    for rung, field, volumes in cases:
        with pytest.raises(WorkloadInvalid) as refused:
            _check(rung, *volumes)
        assert refused.value.field == field, (rung, refused.value.message)
