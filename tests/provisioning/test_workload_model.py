"""A serverless workload's ``model``, without a database: its stored form, the rules (serverless only, a size in
GB, a model cache that is one of the workload's own volumes) with the field each refusal names, and where a
replica finds its model cache."""

from __future__ import annotations

import math

import pytest

from provisioning.domain.cold_start import MAX_MODEL_GB
from provisioning.domain.os_images import os_catalog
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES, WorkloadInvalid, workload_check
from provisioning.domain.workloads import Model, Volume, Workload

IMAGE = "ghcr.io/acme/server:1.0"
CACHE = Volume("/models", volume=7, read_only=True)


def check(w: Workload, rung: str = "serverless") -> None:
    workload_check(w, rung=rung, registries=DEFAULT_REGISTRIES, os_images=os_catalog())


def refused(w: Workload, rung: str = "serverless") -> WorkloadInvalid:
    with pytest.raises(WorkloadInvalid) as error:
        check(w, rung)
    return error.value


def test_a_model_read_from_the_workloads_own_volume_or_downloaded_is_taken_and_round_trips() -> None:
    cached = Workload(image=IMAGE, volumes=(CACHE,), model=Model(size_gb=20, volume=7))
    check(cached)
    assert cached.to_json()["model"] == {"size_gb": 20, "volume": 7}
    assert Workload.from_json(cached.to_json()) == cached
    assert cached.model_mount() == "/models"
    downloaded = Workload(image=IMAGE, model=Model(size_gb=13.5))
    check(downloaded)
    assert downloaded.to_json()["model"] == {"size_gb": 13.5}
    assert downloaded.model_mount() is None
    assert Workload.from_json(downloaded.to_json()) == downloaded


def test_a_workload_without_a_model_is_stored_as_before() -> None:
    assert "model" not in Workload(image=IMAGE).to_json()
    assert Workload.from_json({"image": IMAGE}).model is None


@pytest.mark.parametrize("rung", ["container", "job", "vm", "bare_metal"])
def test_only_serverless_replicas_name_a_model(rung: str) -> None:
    image = None if rung in ("vm", "bare_metal") else IMAGE
    error = refused(Workload(image=image, model=Model(size_gb=8)), rung)
    assert error.field == "model"
    assert f"The {rung} rung does not take a model to load" in error.message
    assert "offered on serverless" in error.message


@pytest.mark.parametrize("size", [0, -1, MAX_MODEL_GB + 1, math.inf, math.nan, True, "20"])
def test_a_size_is_a_positive_number_of_gb_within_bounds(size: object) -> None:
    error = refused(Workload(image=IMAGE, model=Model(size_gb=size)))  # type: ignore[arg-type]
    assert error.field == "model.size_gb"
    assert "GB" in error.message


def test_the_model_cache_is_one_of_the_workloads_volumes() -> None:
    error = refused(Workload(image=IMAGE, volumes=(CACHE,), model=Model(size_gb=20, volume=8)))
    assert error.field == "model.volume"
    assert "Volume 8 is not one of the workload's volumes" in error.message
    scratch = Volume("/scratch", scratch_gb=10)
    assert refused(Workload(image=IMAGE, volumes=(scratch,), model=Model(size_gb=1, volume=1))).field == "model.volume"
