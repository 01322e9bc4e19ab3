"""A serverless endpoint's autoscaling at the API: taken with the workload, shown on every read with the defaults
filled in as they are applied (what the placed devices allow, the operator's idle window), and refused with 422
``validation_error`` naming the field when it is out of bounds, at odds with itself or with the devices, or asked
on another rung."""

from __future__ import annotations

from typing import Any

import pytest

from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import small_fleet

URL = "/api/v1/allocations"
H100 = "H100-SXM-80GB"
IMAGE = "vllm/vllm-openai:v0.11.0"


@pytest.fixture
def fleet(db: None) -> Any:
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def endpoint(autoscaling: dict[str, Any] | None = None, *, rung: str = "serverless", gpus: int = 4) -> dict[str, Any]:
    workload: dict[str, Any] = {"image": IMAGE, "ports": [{"port": 8000, "expose": "public"}]}
    if autoscaling is not None:
        workload["autoscaling"] = autoscaling
    return {"name": "chat", "rung": rung, "gpu_model": H100, "gpus": gpus, "workload": workload}


def test_an_endpoint_takes_its_autoscaling_and_every_read_shows_it_as_applied(
    api: Any, alice: Any, fleet: Any, settings: Any
) -> None:
    client = api(alice)
    asked = {
        "min_replicas": 1,
        "max_replicas": 2,
        "target_in_flight": 8,
        "scale_down_window_s": 120,
        "buffer_replicas": 1,
        "signal": "kv_cache",
        "kv_cache_target": "0.70",
    }
    made = client.post(URL, endpoint(asked), format="json")
    assert made.status_code == 201, made.content
    applied = {
        **asked,
        "kv_cache_target": "0.7",  # a decimal string, as fractions are in every answer
        "scale_up_window_s": 0,
        "idle_seconds": None,  # min_replicas 1: it never goes to zero
    }
    assert made.json()["workload"]["autoscaling"] == applied
    read = client.get(f"{URL}/{made.json()['id']}").json()
    assert read == made.json()
    assert [a["workload"]["autoscaling"] for a in client.get(URL).json()["results"]] == [applied]
    stored = Allocation.objects.get().workload
    assert stored is not None
    assert stored["autoscaling"]["idle_seconds"] is None  # as asked: the default is the operator's, when applied


def test_left_out_every_value_takes_its_default_the_operators_idle_window_and_the_devices_limit(
    api: Any, alice: Any, fleet: Any, settings: Any
) -> None:
    client = api(alice)
    made = client.post(URL, endpoint(), format="json")
    assert made.status_code == 201, made.content
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 600
    shown = client.get(f"{URL}/{made.json()['id']}").json()["workload"]["autoscaling"]
    assert shown == {
        "min_replicas": 0,
        "max_replicas": 3,  # four GPUs: one kept for a rollout's surge replica
        "target_in_flight": 4,
        "scale_up_window_s": 0,
        "scale_down_window_s": 300,
        "idle_seconds": 600,
        "buffer_replicas": 0,
        "signal": "queue_depth",
        "kv_cache_target": None,
    }
    own = client.post(URL, endpoint({"idle_seconds": 900}), format="json")
    assert own.json()["workload"]["autoscaling"]["idle_seconds"] == 900


def test_other_rungs_show_no_autoscaling(api: Any, alice: Any, fleet: Any) -> None:
    made = api(alice).post(URL, endpoint(rung="container", gpus=1), format="json")
    assert made.status_code == 201, made.content
    assert made.json()["workload"]["autoscaling"] is None


REFUSED = [
    ({"max_replicas": 4}, "workload.autoscaling.max_replicas", "at most 3 replicas"),
    ({"min_replicas": 3, "max_replicas": 2}, "workload.autoscaling.min_replicas", "above max_replicas (2)"),
    ({"min_replicas": 2, "buffer_replicas": 2}, "workload.autoscaling.buffer_replicas", "above max_replicas (3)"),
    ({"min_replicas": 1, "idle_seconds": 600}, "workload.autoscaling.idle_seconds", "never goes to zero"),
    ({"kv_cache_target": 0.5}, "workload.autoscaling.kv_cache_target", "kv_cache"),
    ({"signal": "kv_cache", "kv_cache_target": 0}, "workload.autoscaling.kv_cache_target", "above 0"),
    ({"signal": "kv_cache", "kv_cache_target": "1.5"}, "workload.autoscaling.kv_cache_target", "less than or equal"),
    ({"signal": "gpu"}, "workload.autoscaling.signal", "not a valid choice"),
    ({"target_in_flight": 0}, "workload.autoscaling.target_in_flight", "greater than or equal to 1"),
    ({"idle_seconds": 5}, "workload.autoscaling.idle_seconds", "greater than or equal to 30"),
    ({"scale_down_window_s": 7200}, "workload.autoscaling.scale_down_window_s", "less than or equal to 3600"),
    ({"min_replica": 1}, "workload.autoscaling.min_replica", "Unknown field"),
]


@pytest.mark.parametrize(("asked", "field", "words"), REFUSED, ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(REFUSED)])
def test_autoscaling_out_of_bounds_or_at_odds_is_refused_naming_the_field(
    api: Any, alice: Any, fleet: Any, asked: dict[str, Any], field: str, words: str
) -> None:
    problem = assert_problem(api(alice).post(URL, endpoint(asked), format="json"), 422, "validation_error")
    assert list(problem["errors"]) == [field], problem
    assert words in problem["errors"][field][0]
    assert not Allocation.objects.exists()


def test_the_limit_says_why_a_device_is_kept(api: Any, alice: Any, fleet: Any) -> None:
    problem = assert_problem(
        api(alice).post(URL, endpoint({"max_replicas": 2}, gpus=1), format="json"), 422, "validation_error"
    )
    assert problem["detail"] == (
        "This endpoint serves at most 1 replicas: it is placed on one device, so it serves one replica (rolled only "
        "from zero). More replicas need more GPUs."
    )


def test_another_rung_refuses_autoscaling(api: Any, alice: Any, fleet: Any) -> None:
    body = endpoint({"min_replicas": 1}, rung="container", gpus=1)
    problem = assert_problem(api(alice).post(URL, body, format="json"), 422, "validation_error")
    assert problem["errors"] == {
        "workload.autoscaling": [
            "The container rung does not take autoscaling (only an endpoint scales on demand); it is offered on "
            "serverless."
        ]
    }
