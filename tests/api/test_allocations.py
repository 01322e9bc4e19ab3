"""/api/v1/allocations: placing, both axes, every refusal code, stopping, the cross-tenant rule."""

import copy

import pytest
from django.test import override_settings

from portal import words
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.models import Allocation, GpuClaim, Node
from provisioning.services.fleet import fleet_load, node_fail
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import node, small_fleet

SIMULATED = SimulatedProvisioner().last_checkpoint

URL = "/api/v1/allocations"
H100, H200 = "H100-SXM-80GB", "H200-141GB"


@pytest.fixture
def fleet(db):
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def ask(client, **body):
    body.setdefault("name", "work")
    body.setdefault("rung", "container")
    return client.post(URL, body, format="json")


def test_it_places_whole_gpus_and_states_both_axes(api, alice, fleet, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = ask(api(alice), gpu_model=H100, gpus=2)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["rung"], body["performance_isolation"], body["security_isolation"]) == (
        "container",
        "whole_gpu",
        "container",
    )
    assert (body["gpu_model"], body["region"], body["hall"]) == (H100, "eu-west", "eu-west-1a")
    assert len(body["devices"]) == 2
    assert len({d["node"] for d in body["devices"]}) == 1
    assert body["state"] == "placed"  # provisioning is queued for after the commit
    assert api(alice).get(f"{URL}/{body['id']}").json()["state"] == "provisioning"
    assert GpuClaim.objects.filter(allocation_id=body["id"]).count() == 16


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_the_simulated_provisioner_brings_it_to_running(api, alice, fleet, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = ask(api(alice), gpu_model=H100, gpus=1).json()
    assert api(alice).get(f"{URL}/{created['id']}").json()["state"] == "running"


@pytest.mark.parametrize(
    "shape",
    [
        {"gpus": 2},
        {"mig_profile": "3g.40gb"},
        {"rung": "serverless", "share": {"mode": "time_slicing", "fraction": "0.25"}},
        {"rung": "serverless", "share": {"mode": "mps", "fraction": "0.5"}},
    ],
)
def test_the_answer_to_a_placement_is_what_reading_it_gives(api, alice, fleet, shape):
    # The POST answers from the rows it wrote (api.allocations.placed_answer); a read goes through the serializer.
    made = ask(api(alice), gpu_model=H100, **shape)
    assert made.status_code == 201, made.content
    assert made.json() == api(alice).get(f"{URL}/{made.json()['id']}").json()


def test_mig_slices_land_at_the_start_that_keeps_the_4g(api, alice, fleet):
    body = ask(api(alice), gpu_model=H100, mig_profile="3g.40gb").json()
    assert body["performance_isolation"] == "mig"
    assert body["devices"][0]["mig_profile"] == "3g.40gb"
    assert body["devices"][0]["mig_start"] == 4


def test_soft_shares_are_serverless_and_single_tenant(api, alice, charlie, fleet):
    share = {"mode": "time_slicing", "fraction": "0.25"}
    mine = ask(api(alice), rung="serverless", gpu_model=H100, share=share).json()
    again = ask(api(alice), rung="serverless", gpu_model=H100, share=share).json()
    theirs = ask(api(charlie), rung="serverless", gpu_model=H100, share=share).json()
    assert mine["performance_isolation"] == "time_slicing"
    assert mine["devices"][0]["share"] == "0.25"
    assert again["devices"][0]["gpu_uuid"] == mine["devices"][0]["gpu_uuid"]
    assert theirs["devices"][0]["gpu_uuid"] != mine["devices"][0]["gpu_uuid"]


def test_a_combination_the_rung_does_not_offer_is_422(api, alice, fleet):
    response = ask(api(alice), rung="vm", gpu_model=H100, share={"mode": "mps", "fraction": "0.5"})
    body = assert_problem(response, 422, "invalid_isolation")
    assert "vm" in body["detail"]
    assert body["reasons"][0]["code"] == "invalid_isolation"


def test_no_capacity(api, alice, fleet):
    body = assert_problem(ask(api(alice), gpu_model="B200", gpus=1), 409, "no_capacity")
    assert body["reasons"]
    assert_problem(
        ask(api(alice), gpu_model=H100, gpus=8, gang={"size": 3, "topology": "nvlink"}, rung="job"), 409, "no_capacity"
    )


def test_residency(api, alice, fleet):
    api(alice).patch("/api/v1/tenant", {"residency": {"regions": ["us-east"]}}, format="json")
    assert_problem(ask(api(alice), gpu_model=H100, gpus=1), 409, "residency")
    placed = ask(api(alice), gpu_models=[H100, H200], gpus=1).json()
    assert placed["region"] == "us-east"


def test_isolation_policy(api, alice, fleet):
    api(alice).patch("/api/v1/tenant", {"isolation": {"allow_soft_sharing": False}}, format="json")
    response = ask(api(alice), rung="serverless", gpu_model=H100, share={"mode": "mps", "fraction": "0.5"})
    assert_problem(response, 409, "isolation_policy")


def test_quota(api, alice, operator, acme, fleet):
    assert api(operator).put("/api/v1/ops/tenants/acme/quota", {"gpus": "1.5"}, format="json").status_code == 200
    assert ask(api(alice), gpu_model=H100, gpus=1).status_code == 201
    body = assert_problem(ask(api(alice), gpu_model=H100, gpus=1), 409, "quota")
    assert "0.5" in body["detail"]
    assert ask(api(alice), gpu_model=H100, mig_profile="3g.40gb").status_code == 201  # 3/7 of a GPU fits


def test_version_skew(api, alice, db):
    document = small_fleet()
    hall = document["regions"][0]["halls"][0]
    hall["nodes"] = [node("euw1a-01", "eu-west-1a/nvl-0"), copy.deepcopy(node("euw1a-02", "eu-west-1a/nvl-0"))]
    hall["nodes"][1]["versions"]["driver"] = "570.10"
    fleet_load(document=document, actor=SYSTEM)
    response = ask(api(alice), rung="job", gpu_model=H100, gpus=8, gang={"size": 2, "topology": "nvlink"})
    assert_problem(response, 409, "version_skew")


def test_fabric_split(api, alice, db):
    document = small_fleet()
    hall = document["regions"][0]["halls"][0]
    nics = [{"device": f"mlx5_{i}", "rail": i, "gpus": [i]} for i in range(8)]
    hall["nodes"] = [
        node(
            "euw1a-01", "eu-west-1a/nvl-0", rdma={"fabric": "eu-west-1a/ib-0", "link_layer": "infiniband", "nics": nics}
        ),
        node("euw1a-02", "eu-west-1a/nvl-0"),  # no RDMA: gangs only with nodes without it
    ]
    fleet_load(document=document, actor=SYSTEM)
    response = ask(api(alice), rung="job", gpu_model=H100, gpus=8, gang={"size": 2, "topology": "nvlink"})
    body = assert_problem(response, 409, "fabric_split")
    assert body["reasons"][0]["code"] == "fabric_split"
    assert ask(api(alice), rung="job", gpu_model=H100, gpus=4, gang={"size": 2}).status_code == 201  # one node


def test_bad_input_gets_field_errors(api, alice, fleet):
    body = assert_problem(ask(api(alice), gpus=1), 422, "validation_error")
    assert "gpu_model" in body["errors"]
    body = assert_problem(ask(api(alice), gpu_model=H100, gpus=1, mig_profile="1g.10gb"), 422, "validation_error")
    assert "gpus" in body["errors"]
    body = assert_problem(ask(api(alice), gpu_model="X9000", gpus=1), 422, "validation_error")
    assert "gpu_model" in body["errors"]
    body = assert_problem(
        ask(api(alice), rung="serverless", gpu_model=H100, share={"mode": "mps", "fraction": "1.5"}),
        422,
        "validation_error",
    )
    assert "share.fraction" in body["errors"]


def test_stopping_gives_the_gpus_back(api, alice, fleet, django_capture_on_commit_callbacks):
    client = api(alice)
    body = ask(client, gpu_model=H200, gpus=8, regions=["us-east"]).json()
    assert_problem(ask(client, gpu_model=H200, gpus=1, regions=["us-east"]), 409, "no_capacity")
    with django_capture_on_commit_callbacks(execute=True):
        stopped = client.delete(f"{URL}/{body['id']}")
    assert stopped.status_code == 200
    assert stopped.json()["state"] == "stopping"  # the teardown is queued for after the commit
    assert client.get(f"{URL}/{body['id']}").json()["state"] == "stopped"
    assert not GpuClaim.objects.filter(allocation_id=body["id"]).exists()
    assert client.delete(f"{URL}/{body['id']}").json()["state"] == "stopped"  # harmless twice
    assert ask(client, gpu_model=H200, gpus=8, regions=["us-east"]).status_code == 201


def test_a_failed_node_restarts_jobs_elsewhere_and_fails_the_rest(
    api, alice, fleet, django_capture_on_commit_callbacks
):
    client = api(alice)
    job = ask(client, rung="job", gpu_model=H100, gpus=6).json()
    failed_host = job["devices"][0]["node"]
    other = ask(client, gpu_model=H100, gpus=2).json()
    assert other["devices"][0]["node"] == failed_host  # best fit put it beside the job
    with django_capture_on_commit_callbacks(execute=True):
        node_fail(node=Node.objects.get(hostname=failed_host), actor=SYSTEM, last_checkpoint=SIMULATED)
    job_after = client.get(f"{URL}/{job['id']}").json()
    assert job_after["state"] == "restarting"  # until the gang runs on its new nodes
    assert job_after["restarts"] == 1
    assert [f["node"] for f in job_after["faults"]] == [failed_host]
    assert {d["node"] for d in job_after["devices"]} != {failed_host}
    other_after = client.get(f"{URL}/{other['id']}").json()
    assert other_after["state"] == "failed"
    assert failed_host in other_after["failure_reason"]


def test_another_tenants_allocation_is_not_found(api, alice, charlie, fleet):
    mine = ask(api(alice), gpu_model=H100, gpus=1).json()
    assert_problem(api(charlie).get(f"{URL}/{mine['id']}"), 404, "not_found")
    assert_problem(api(charlie).delete(f"{URL}/{mine['id']}"), 404, "not_found")
    assert api(charlie).get(URL).json()["results"] == []
    assert Allocation.objects.get(pk=mine["id"]).state != "stopping"


def test_anonymous_and_wrong_roles_are_refused(api, alice, bob, acme, fleet):
    assert_problem(api().get(URL), 401, "not_authenticated")
    assert_problem(ask(api(), gpu_model=H100, gpus=1), 401, "not_authenticated")
    bob.membership.role = "viewer"
    bob.membership.save()
    session = api()
    session.force_login(bob)
    assert session.get(URL).status_code == 200
    assert_problem(ask(session, gpu_model=H100, gpus=1), 403, "permission_denied")


def test_offerings_are_public_and_follow_capacity(api, alice, fleet):
    rows = api().get("/api/v1/offerings").json()
    container = next(r for r in rows if (r["rung"], r["gpu_model"], r["region"]) == ("container", H100, "eu-west"))
    assert container["available"] == 20
    assert container["security_isolation"] == "container"
    ask(api(alice), gpu_model=H100, gpus=3)
    rows = api().get("/api/v1/offerings").json()
    container = next(r for r in rows if (r["rung"], r["gpu_model"], r["region"]) == ("container", H100, "eu-west"))
    assert container["available"] == 17


def test_offerings_say_both_promises_in_words_as_the_portal_does(api, fleet):
    rows = api().get("/api/v1/offerings").json()
    serverless = next(r for r in rows if (r["rung"], r["gpu_model"]) == ("serverless", H100))
    assert serverless["performance_words"] == {p: words.PERFORMANCE[p] for p in serverless["performance_isolation"]}
    assert serverless["security_words"] == words.SECURITY["container"]
    vm = next(r for r in rows if r["rung"] == "vm")
    assert vm["security_words"].startswith("A virtual machine: a hypervisor boundary")


def test_fragmentation_and_defragment_are_for_operators(api, alice, operator, fleet):
    figures = api(operator).get("/api/v1/ops/fragmentation").json()
    assert {f["hall"] for f in figures} == {"eu-west-1a", "eu-west-1b", "us-east-1a"}
    assert_problem(api(alice).get("/api/v1/ops/fragmentation"), 403, "permission_denied")
    plan = api(operator).post("/api/v1/ops/defragment", {"dry_run": True}, format="json")
    assert plan.status_code == 200
    assert plan.json()["moves"] == []  # carrying plans out: tests/api/test_defragment.py


def test_the_list_filters_by_name(api, alice, fleet):
    client = api(alice)
    first = ask(client, name="train", rung="container", gpu_model="H100-SXM-80GB", gpus=1).json()
    ask(client, name="other", rung="container", gpu_model="H100-SXM-80GB", gpus=1)
    answer = client.get("/api/v1/allocations?name=train").json()
    assert [row["id"] for row in answer["results"]] == [first["id"]]
    assert client.get("/api/v1/allocations?name=nothing").json()["results"] == []
