"""What ``ladder launch`` shows before it asks, without a server (ladder_cli.plan), and how a refusal's reasons
read (ladder_cli.errors)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ladder_cli import plan
from ladder_cli.errors import REFUSED, refusal

H100 = "H100-SXM-80GB"
WHOLE = "Whole GPUs: every SM and all the memory of each GPU are yours alone."
MIG = "A MIG slice: your own SMs, memory and memory bandwidth, a hardware partition of the GPU."
CONTAINER = "A container in your own namespace."


def offering(
    rung: str, region: str = "eu-west", model: str = H100, prices: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "rung": rung,
        "gpu_model": model,
        "region": region,
        "performance_isolation": ["mig", "whole_gpu"],
        "security_isolation": "container",
        "prices": prices or {},
        "currency": "usd",
        "performance_words": {"whole_gpu": WHOLE, "mig": MIG},
        "security_words": CONTAINER,
    }


JOB = {"name": "train", "rung": "job", "gpu_model": H100, "gpus": 8, "gang": {"size": 2, "topology": "nvlink"}}


def test_a_gang_is_priced_for_every_gpu_of_every_member() -> None:
    offered = [offering("job", prices={"gpu": "2.490000"}), offering("container", prices={"gpu": "9"})]
    assert plan.price(JOB, offered) == "39.84 USD an hour (16 x 2.49 USD per GPU-hour)"
    assert plan.shape(JOB) == (
        "a gang of 2 members x 8 whole GPUs (16 GPUs), started together in one NVLink domain, all or nothing"
    )


HOST = {
    "cpu_per_gpu": 8,
    "memory_gib_per_gpu": 64,
    "cpu_per_slice": 2,
    "memory_gib_per_slice": 16,
    "most_times": 4,
    "prices": {"vcpu": "0.020000", "memory": "0.004000"},
}


def test_vcpus_and_memory_beyond_the_bundle_are_priced_for_every_member() -> None:
    body = {**JOB, "cpu": 96, "memory_gib": 256}  # per member: 32 vCPUs beyond 64; 256 GiB is within 512
    assert plan.shape(body).startswith("a gang of 2 members x 8 whole GPUs with 96 vCPUs and 256 GiB (16 GPUs)")
    offered = [{**offering("job", prices={"gpu": "2.490000"}), "host": HOST}]
    assert plan.price(body, offered) == (
        "41.12 USD an hour (16 x 2.49 USD per GPU-hour, and 1.28 USD for 64 vCPUs beyond the bundle)"
    )
    unsold = [{**offering("job", prices={"gpu": "2.490000"}), "host": {**HOST, "prices": {}}}]
    assert plan.price(body, unsold) == plan.NOT_PRICED  # the region sells only the bundle
    assert plan.price({**JOB, "cpu": 8}, unsold) == "39.84 USD an hour (16 x 2.49 USD per GPU-hour)"


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        (
            {"mig_profile": "3g.40gb"},
            "1.33 USD an hour (1 x 1.3339 USD per slice-hour); nothing while it idles at zero",
        ),
        (
            {"share": {"mode": "mps", "fraction": "0.25"}},
            "0.75 USD an hour (0.25 x 2.988 USD per GPU-hour); nothing while it idles at zero",
        ),
        ({"gpus": 2}, "5.98 USD an hour (2 x 2.988 USD per GPU-hour); nothing while it idles at zero"),
    ],
)
def test_each_shape_is_priced_in_its_own_unit(shape: dict[str, Any], expected: str) -> None:
    offered = [offering("serverless", prices={"gpu": "2.988000", "mig:3g.40gb": "1.333900"})]
    assert plan.price({"rung": "serverless", "gpu_model": H100, **shape}, offered) == expected


def test_nodes_are_priced_per_node_and_a_missing_price_says_so() -> None:
    metal = {"rung": "bare_metal", "gpu_model": H100, "nodes": 2}
    assert plan.price(metal, [offering("bare_metal", prices={"node": "17.928"})]) == (
        "35.86 USD an hour (2 x 17.928 USD per node-hour)"
    )
    assert plan.price(metal, [offering("bare_metal")]) == "not priced"
    assert plan.price(metal, []) == "not priced"
    assert plan.price({**metal, "regions": ["us-east"]}, [offering("bare_metal", prices={"node": "1"})]) == "not priced"


def test_where_prices_differ_each_place_is_priced() -> None:
    body = {"rung": "container", "gpu_models": [H100, "H200-141GB"], "gpus": 1}
    offered = [
        offering("container", prices={"gpu": "2.6145"}),
        offering("container", "us-east", "H200-141GB", {"gpu": "3.5595"}),
    ]
    assert plan.price(body, offered) == (
        "an hour, by where it lands: 2.61 USD on H100-SXM-80GB in eu-west, 3.56 USD on H200-141GB in us-east"
    )


def test_both_promises_are_the_offerings_words_for_the_shape_asked() -> None:
    offered = [offering("container")]
    assert plan.promises({"rung": "container", "gpus": 1}, offered) == (WHOLE, CONTAINER)
    assert plan.promises({"rung": "container", "mig_profile": "1g.10gb"}, offered) == (MIG, CONTAINER)
    assert plan.performance_of({"share": {"mode": "time_slicing", "fraction": "0.5"}}) == "time_slicing"
    assert plan.promises({"rung": "vm", "gpus": 1}, offered)[1] == "the vm rung's (it is not offered now)"


def test_the_budget_left_this_month_in_words() -> None:
    assert plan.budget({"monthly": None, "spend": "3.00", "currency": "usd"}) == "no budget set"
    assert plan.budget(None) == "not shown to your role"
    left = plan.budget({"monthly": "100.00", "spend": "12.50", "currency": "usd", "hard_stop": True})
    assert left == "87.50 USD left of 100.00 this month (hard stop: new work is refused once it is used up)"
    used = plan.budget({"monthly": "0.01", "spend": "0.09", "currency": "usd", "hard_stop": True})
    assert used == "used up: 0.09 USD spent of 0.01 this month; its hard stop refuses new work"


def test_the_plan_says_what_runs_where_and_at_what_price() -> None:
    body = {
        **JOB,
        "workload": {
            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
            "command": ["torchrun", "train.py"],
            "args": ["--name", "my run"],
            "checkpoint": {"path": "/checkpoints", "interval_s": 600},
        },
    }
    rows = dict(plan.plan(body, [offering("job", prices={"gpu": "2.49"})], {"monthly": None}, "job.yaml"))
    assert rows == {
        "Launch": "train (from job.yaml)",
        "Rung": "job",
        "Shape": plan.shape(JOB),
        "GPU model": H100,
        "Regions": "any your residency allows",
        "Image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "Command": "torchrun train.py --name 'my run'",
        "Framework": "torchrun (the default)",
        "Checkpoint": "/checkpoints every 600 s",
        "Performance": WHOLE,
        "Security": CONTAINER,
        "Price": "39.84 USD an hour (16 x 2.49 USD per GPU-hour)",
        "Budget": "no budget set",
    }


def test_a_refusal_says_its_reasons_in_words_once() -> None:
    problem = {
        "detail": "Hall eu-west-1b is fenced for sovereign EU tenants.",
        "code": "residency",
        "reasons": [
            {"code": "residency", "message": "Hall eu-west-1b is fenced for sovereign EU tenants."},
            {"code": "residency", "message": "Region us-east was not asked for."},
        ],
    }
    error = refusal(409, json.dumps(problem).encode())
    assert error.exit_code == REFUSED
    assert error.line() == (
        "ladder: refused: Hall eu-west-1b is fenced for sovereign EU tenants.: Region us-east was not asked for. "
        "(residency)"
    )


def test_the_plan_says_the_class_its_promise_and_the_other_classes_prices() -> None:
    row = offering("container", prices={"gpu": "2.00"})
    row["classes"] = [
        {"capacity_class": "on_demand", "title": "On-demand", "promise": "Never preempted.", "prices": {"gpu": "2.00"},
         "discount_pct": None},
        {"capacity_class": "spot", "title": "Spot", "promise": "May be preempted with notice.",
         "prices": {"gpu": "0.80"}, "discount_pct": "60.00"},
    ]  # fmt: skip
    spot = {"name": "nb", "rung": "container", "gpu_model": H100, "gpus": 2, "capacity_class": "spot"}
    lines = dict(plan.plan(spot, [row], None, "task.yaml"))
    assert lines["Capacity"] == "Spot: May be preempted with notice. When preempted, it is stopped."
    assert lines["Price"] == "1.60 USD an hour (2 x 0.80 USD per GPU-hour)"
    assert lines["Or"] == "On-demand: 4.00 USD an hour (2 x 2.00 USD per GPU-hour)"
    on_demand = dict(plan.plan({**spot, "capacity_class": "on_demand"}, [row], None, "task.yaml"))
    assert on_demand["Price"] == "4.00 USD an hour (2 x 2.00 USD per GPU-hour)"
    assert on_demand["Or"] == "Spot, 60% off: 1.60 USD an hour (2 x 0.80 USD per GPU-hour)"
    job = {**row, "rung": "job"}
    requeued = dict(plan.plan({**spot, "rung": "job", "on_preemption": "requeue"}, [job], None, "job.yaml"))
    assert requeued["Price"] == "1.60 USD an hour (2 x 0.80 USD per GPU-hour)"
    assert requeued["Capacity"].endswith("When preempted, it is requeued from its checkpoint.")


def test_the_plan_gives_a_reservations_price_by_term_beside_the_others() -> None:
    row = offering("container", prices={"gpu": "2.00"})
    row["classes"] = [
        {"capacity_class": "on_demand", "title": "On-demand", "promise": "Never preempted.", "prices": {"gpu": "2.00"},
         "discount_pct": None},
        {"capacity_class": "reserved", "title": "Reserved", "promise": "Drawn from your reservation.", "prices": {},
         "discount_pct": None, "terms": [{"days": 7, "discount_pct": 10, "price_per_gpu_hour": "1.800000"},
                                         {"days": 365, "discount_pct": 40, "price_per_gpu_hour": "1.200000"}]},
    ]  # fmt: skip
    lines = dict(plan.plan({"name": "nb", "rung": "container", "gpu_model": H100, "gpus": 2}, [row], None, "t.yaml"))
    assert lines["Or"] == "Reserved, a reservation per GPU-hour by term: 7 days 1.80, 365 days 1.20"
