"""/api/v1/ops/fleet/target, /drift and /upgrade-plan: each GPU model's target versions (audited), the nodes that
differ from it or read "unknown", and the rolling upgrade's waves of whole NVLink domains (operators only)."""

from __future__ import annotations

import pytest

from core.models import AuditEvent
from provisioning.models import Allocation, Node, VersionTarget
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import VERSIONS, small_fleet

TARGET = "/api/v1/ops/fleet/target"
DRIFT = "/api/v1/ops/fleet/drift"
PLAN = "/api/v1/ops/fleet/upgrade-plan"
H100 = "H100-SXM-80GB"
NEW_DRIVER = "590.44.01"


@pytest.fixture
def fleet(db):
    return fleet_load(document=small_fleet(), actor=SYSTEM)


@pytest.fixture
def ops(api, operator):
    return api(operator)


def target(client, **versions):
    body = {"gpu_model": H100, **VERSIONS, "reason": "CVE-2026-0001 fix", **versions}
    return client.put(TARGET, body, format="json")


@pytest.mark.parametrize("who", ["alice", "finance", "compliance"])
@pytest.mark.parametrize(("method", "url"), [("get", TARGET), ("put", TARGET), ("get", DRIFT), ("get", PLAN)])
def test_only_operators_reach_targets_drift_and_plans(api, request, fleet, who, method, url):
    client = api(request.getfixturevalue(who))
    body = {"gpu_model": H100, **VERSIONS}
    assert_problem(getattr(client, method)(url, body, format="json"), 403, "permission_denied")
    assert not VersionTarget.objects.exists()


def test_anonymous_callers_are_turned_away(api, fleet):
    assert api().get(DRIFT).status_code == 401


def test_an_operator_sets_a_models_target_audited_and_replaces_it(ops, fleet):
    response = target(ops)
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in ("gpu_model", *VERSIONS)} == {"gpu_model": H100, **VERSIONS}
    target(ops, driver=NEW_DRIVER)
    assert [t["driver"] for t in ops.get(TARGET).json()] == [NEW_DRIVER]  # one row per model
    events = AuditEvent.objects.filter(action="fleet.target_set").order_by("seq")
    assert [e.data["versions"]["driver"] for e in events] == [VERSIONS["driver"], NEW_DRIVER]
    last = events.last()
    assert last is not None
    assert last.data["previous"]["driver"] == VERSIONS["driver"]
    assert last.data["reason"] == "CVE-2026-0001 fix"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"gpu_model": "Z9000"}, "validation_error"),
        ({"nccl": "unknown"}, "validation_error"),
        ({"firmware": ""}, "validation_error"),
        ({"driver": "5" * 33}, "validation_error"),
        ({"surprise": "field"}, "validation_error"),
    ],
)
def test_a_bad_target_is_refused_and_nothing_is_written(ops, fleet, change, code):
    assert_problem(target(ops, **change), 422, code)
    assert not VersionTarget.objects.exists()
    assert not AuditEvent.objects.filter(action="fleet.target_set").exists()


def test_drift_names_each_differing_field_and_every_unknown_version(ops, fleet):
    Node.objects.filter(hostname="use1a-01").update(nccl_version="unknown", firmware_version="unknown")
    body = ops.get(DRIFT).json()
    assert [n["hostname"] for n in body["nodes"]] == ["use1a-01"]  # no target yet: only the unknowns
    assert body["nodes"][0]["unknown"] == ["nccl", "firmware"]
    assert body["nodes"][0]["has_target"] is False
    target(ops, driver=NEW_DRIVER)
    body = ops.get(DRIFT).json()
    drifting = {n["hostname"]: n for n in body["nodes"]}
    assert set(drifting) == {"euw1a-01", "euw1a-02", "euw1a-03", "use1a-01"}  # the H200s have no target
    assert drifting["euw1a-01"]["differs"] == {"driver": {"node": VERSIONS["driver"], "target": NEW_DRIVER}}
    assert drifting["euw1a-01"]["nvlink_domain"] == "eu-west-1a/nvl-0"
    assert (body["drifting"], body["unknown"]) == (3, 1)
    Node.objects.filter(gpu_model__name=H100).update(driver_version=NEW_DRIVER)  # the upgrade done
    assert [n["hostname"] for n in ops.get(DRIFT).json()["nodes"]] == ["use1a-01"]


def test_the_plan_drains_whole_drifting_domains_emptiest_first_and_lists_the_work_to_move(
    api, alice, ops, fleet, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        placed = api(alice).post(
            "/api/v1/allocations", {"name": "w", "rung": "container", "gpu_model": H100, "gpus": 8}, format="json"
        )
    assert placed.status_code == 201, placed.content
    host = Allocation.objects.get(pk=placed.json()["id"]).devices.get(gpu_index=0).hostname
    assert ops.get(PLAN).json()["waves"] == []  # no target, nothing drifts
    target(ops, driver=NEW_DRIVER)
    # 36 GPUs in the fleet; half of them is 18: nvl-1 (4 GPUs, idle) first, then nvl-0 (16 GPUs) alone.
    plan = ops.get(PLAN, {"max_share": "0.5"}).json()
    assert (plan["fleet_gpus"], plan["max_gpus_per_wave"]) == (36, 18)
    waves = plan["waves"]
    assert [[d["nvlink_domain"] for d in w["domains"]] for w in waves] == [["eu-west-1a/nvl-1"], ["eu-west-1a/nvl-0"]]
    assert [n["hostname"] for n in waves[1]["domains"][0]["nodes"]] == ["euw1a-01", "euw1a-02"]
    assert waves[1]["gpus_in_use"] == 8
    assert waves[1]["allocations"] == [
        {"id": placed.json()["id"], "tenant": "acme", "rung": "container", "action": "move", "hostnames": [host]}
    ]
    assert waves[0]["allocations"] == []
    whole = ops.get(PLAN, {"max_share": "1", "max_domains": "1"}).json()
    assert [len(w["domains"]) for w in whole["waves"]] == [1, 1]
    # No limit given: a tenth of the fleet, 3 GPUs, which no drifting domain fits in.
    assert "at most 3 GPUs" in assert_problem(ops.get(PLAN), 422, "wave_limit")["detail"]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"max_share": "2"}, "validation_error"),
        ({"max_share": "lots"}, "validation_error"),
        ({"max_domains": "0"}, "validation_error"),
        ({"max_share": "0.1"}, "wave_limit"),  # 3 GPUs: smaller than any drifting domain
    ],
)
def test_bad_wave_limits_are_refused_with_a_clear_problem(ops, fleet, query, code):
    target(ops, driver=NEW_DRIVER)
    body = assert_problem(ops.get(PLAN, query), 422, code)
    if code == "wave_limit":
        assert "eu-west-1a/nvl-0 (16 GPUs)" in body["detail"]


def test_the_command_prints_the_same_plan(ops, fleet):
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    target(ops, driver=NEW_DRIVER)
    out = StringIO()
    call_command("fleet_upgrade_plan", "--max-share", "0.5", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "36 GPUs in the fleet; at most 18 per wave; 2 waves"
    assert "  drain eu-west-1a/eu-west-1a/nvl-0: euw1a-01, euw1a-02" in lines
    as_json = StringIO()
    call_command("fleet_upgrade_plan", "--max-share", "0.5", "--json", stdout=as_json)
    assert json.loads(as_json.getvalue()) == ops.get(PLAN, {"max_share": "0.5"}).json()
    with pytest.raises(CommandError, match="raise the limit"):
        call_command("fleet_upgrade_plan", "--max-share", "0.1")
