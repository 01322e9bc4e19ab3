"""/api/v1/ops/fleet, /api/v1/ops/nodes (operators) and /api/v1/regions (everyone signed in)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from core.actor import Actor
from core.models import AuditEvent
from provisioning.models import Node, NodeState, Region
from provisioning.services.fleet import fleet_load
from tenancy.domain.roles import STAFF_PERMISSIONS, StaffRole
from tests.support import assert_problem
from tests.support.fleet_documents import SMALL_FLEET_NODES, changed, node, small_fleet

FLEET_URL = "/api/v1/ops/fleet"
NODES_URL = "/api/v1/ops/nodes"
REGIONS_URL = "/api/v1/regions"
ACTIONS = ("drain", "undrain", "quarantine", "fail")


@pytest.fixture
def fleet(db):
    return fleet_load(document=small_fleet(), actor=Actor.system("tests"))


@pytest.fixture
def ops(api, operator):
    return api(operator)


def node_id(hostname: str) -> int:
    return Node.objects.get(hostname=hostname).pk


def hostnames(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [n["hostname"] for n in response.json()["results"]]


# --- who may call ---------------------------------------------------------------------------------------------


def test_the_operator_group_holds_the_fleet_permissions(operator):
    group = Group.objects.get(name=StaffRole.OPERATOR)
    held = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
    assert held == set(STAFF_PERMISSIONS[StaffRole.OPERATOR])
    assert {"provisioning.view_node", "provisioning.change_node", "provisioning.add_node"} <= held
    assert operator.has_perm("provisioning.change_node")


def _ops_calls():
    return [
        ("post", FLEET_URL),
        ("get", NODES_URL),
        ("get", f"{NODES_URL}/{{id}}"),
        *[("post", f"{NODES_URL}/{{id}}/{name}") for name in ACTIONS],
    ]


@pytest.mark.parametrize(("method", "url"), _ops_calls())
@pytest.mark.parametrize("who", ["alice", "finance", "compliance"])
def test_only_operators_reach_the_ops_endpoints(api, request, fleet, who, method, url):
    client = api(request.getfixturevalue(who))
    response = getattr(client, method)(url.format(id=node_id("euw1a-01")), small_fleet(), format="json")
    assert_problem(response, 403, "permission_denied")
    assert Node.objects.get(hostname="euw1a-01").state == NodeState.READY


@pytest.mark.parametrize(("method", "url"), [*_ops_calls(), ("get", REGIONS_URL)])
def test_anonymous_callers_are_refused(api, fleet, method, url):
    response = getattr(api(), method)(url.format(id=node_id("euw1a-01")), {}, format="json")
    assert_problem(response, 401, "not_authenticated")


def test_a_read_only_operator_key_lists_but_does_not_drain(api, operator, fleet):
    client = api(operator, scopes=("read",))
    assert len(hostnames(client.get(NODES_URL))) == SMALL_FLEET_NODES
    response = client.post(f"{NODES_URL}/{node_id('euw1a-01')}/drain", {}, format="json")
    assert_problem(response, 403, "insufficient_scope")


# --- POST /ops/fleet ------------------------------------------------------------------------------------------


def test_an_operator_loads_a_fleet(ops, operator):
    response = ops.post(FLEET_URL, small_fleet(), format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["nodes"] == {"created": SMALL_FLEET_NODES, "updated": 0, "unchanged": 0}
    assert body["regions"] == {"created": 2, "updated": 0, "unchanged": 0}
    assert body["gpus"]["created"] == 36
    event = AuditEvent.objects.get(action="fleet.loaded")
    assert (event.actor_type, event.actor_label) == ("api_key", "operator")
    assert event.data["nodes"] == body["nodes"]

    again = ops.post(FLEET_URL, small_fleet(), format="json").json()
    assert again["nodes"] == {"created": 0, "updated": 0, "unchanged": SMALL_FLEET_NODES}


def test_a_bad_document_is_refused_whole_with_errors_by_path(ops):
    document = changed(small_fleet(), "regions.0.halls.0.nodes.1.gpu_model", "H100")
    document = changed(document, "regions.1.jurisdiction", "usa")
    document["regions"][1]["halls"][0]["nodes"].append(node("euw1a-01", "us-east-1a/nvl-0", "H200-141GB", gpus=0))

    body = assert_problem(ops.post(FLEET_URL, document, format="json"), 422, "validation_error")

    assert body["detail"] == "The fleet document has 4 problems; nothing was loaded."
    assert set(body["errors"]) == {
        "regions[0].halls[0].nodes[1].gpu_model",
        "regions[1].jurisdiction",
        "regions[1].halls[0].nodes[1].hostname",
        "regions[1].halls[0].nodes[1].gpu_count",
    }
    assert body["errors"]["regions[1].halls[0].nodes[1].gpu_count"] == ["must be 1 to 8, not 0"]
    assert not Region.objects.exists()
    assert not AuditEvent.objects.filter(action="fleet.loaded").exists()


@pytest.mark.parametrize(
    ("body", "where"),
    [({}, "regions"), ({"regions": [], "zones": []}, "zones"), ([], "document"), ({"regions": "eu"}, "regions")],
)
def test_a_document_of_the_wrong_shape_is_422(ops, body, where):
    assert where in assert_problem(ops.post(FLEET_URL, body, format="json"), 422, "validation_error")["errors"]


def test_a_float_in_the_document_is_a_field_error_even_with_an_idempotency_key(ops):
    document = changed(small_fleet(), "regions.0.halls.0.nodes.0.versions.cuda", 13.0)
    response = ops.post(FLEET_URL, document, format="json", HTTP_IDEMPOTENCY_KEY="fleet-float")
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"] == {"regions[0].halls[0].nodes[0].versions.cuda": ["must be a string, not a number"]}


def test_a_repeated_idempotency_key_replays_the_load(ops):
    first = ops.post(FLEET_URL, small_fleet(), format="json", HTTP_IDEMPOTENCY_KEY="fleet-1")
    second = ops.post(FLEET_URL, small_fleet(), format="json", HTTP_IDEMPOTENCY_KEY="fleet-1")
    assert second["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert AuditEvent.objects.filter(action="fleet.loaded").count() == 1


def test_get_on_the_fleet_is_not_offered(ops):
    assert_problem(ops.get(FLEET_URL), 405, "method_not_allowed")


# --- GET /ops/nodes -------------------------------------------------------------------------------------------


def test_an_operator_lists_nodes(ops, fleet):
    response = ops.get(NODES_URL)
    assert hostnames(response) == ["euw1a-01", "euw1a-02", "euw1a-03", "euw1b-01", "use1a-01"]
    first = response.json()["results"][0]
    assert first == {
        "id": node_id("euw1a-01"),
        "hostname": "euw1a-01",
        "region": "eu-west",
        "hall": "eu-west-1a",
        "gpu_model": "H100-SXM-80GB",
        "gpu_count": 8,
        "nvlink_domain": "eu-west-1a/nvl-0",
        "cc_capable": False,
        "cc_mode": False,
        "cpu_tee": "",
        "attestation_key": "",
        "versions": {"driver": "580.65.06", "cuda": "13.0", "nccl": "2.27.7", "firmware": "96.00.B1.00.01"},
        "rdma": None,
        "state": "ready",
        "state_changed_at": first["state_changed_at"],
        "created_at": first["created_at"],
        "gpus": first["gpus"],
    }
    assert [g["index"] for g in first["gpus"]] == list(range(8))
    assert all(g["uuid"].startswith("GPU-") and g["mode"] == "whole" for g in first["gpus"])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"region": "us-east"}, ["use1a-01"]),
        ({"hall": "eu-west-1b"}, ["euw1b-01"]),
        ({"gpu_model": "H200-141GB"}, ["euw1b-01", "use1a-01"]),
        ({"nvlink_domain": "eu-west-1a/nvl-0"}, ["euw1a-01", "euw1a-02"]),
        ({"state": "draining"}, ["euw1a-02"]),
        ({"region": "eu-west", "gpu_model": "H100-SXM-80GB", "state": "ready"}, ["euw1a-01", "euw1a-03"]),
        ({"region": "nowhere"}, []),
    ],
)
def test_it_filters_nodes(ops, fleet, params, expected):
    Node.objects.filter(hostname="euw1a-02").update(state=NodeState.DRAINING)
    assert hostnames(ops.get(NODES_URL, params)) == expected


def test_an_unknown_state_filter_is_a_field_error(ops, fleet):
    body = assert_problem(ops.get(NODES_URL, {"state": "asleep"}), 422, "validation_error")
    assert "state" in body["errors"]


def test_it_pages_nodes_with_a_cursor(ops, fleet):
    response = ops.get(NODES_URL, {"page_size": 2})
    seen = []
    while True:
        body = response.json()
        assert len(body["results"]) <= 2
        seen += [n["hostname"] for n in body["results"]]
        if body["next"] is None:
            break
        response = ops.get(body["next"])
    assert seen == ["euw1a-01", "euw1a-02", "euw1a-03", "euw1b-01", "use1a-01"]


def test_an_operator_reads_one_node(ops, fleet):
    response = ops.get(f"{NODES_URL}/{node_id('euw1b-01')}")
    assert response.status_code == 200
    body = response.json()
    assert (body["hostname"], body["cc_capable"], body["cc_mode"], body["hall"]) == (
        "euw1b-01",
        True,
        True,
        "eu-west-1b",
    )
    assert_problem(ops.get(f"{NODES_URL}/999999"), 404, "not_found")
    assert_problem(ops.get(f"{NODES_URL}/not-a-number"), 404, "not_found")


def test_nodes_are_not_edited_through_the_api(ops, fleet):
    url = f"{NODES_URL}/{node_id('euw1a-01')}"
    assert_problem(ops.patch(url, {"state": "ready"}, format="json"), 405, "method_not_allowed")
    assert_problem(ops.delete(url), 405, "method_not_allowed")


# --- POST /ops/nodes/{id}/<action> ----------------------------------------------------------------------------


def test_an_operator_drains_and_undrains_a_node(ops, fleet):
    url = f"{NODES_URL}/{node_id('euw1a-01')}"
    response = ops.post(f"{url}/drain", {"reason": "NCCL errors"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "draining"
    assert response.json()["hostname"] == "euw1a-01"
    assert len(response.json()["gpus"]) == 8

    assert ops.post(f"{url}/undrain", format="json").json()["state"] == "ready"

    events = AuditEvent.objects.filter(target_type="node").order_by("seq")
    assert [(e.action, e.actor_label, e.data["reason"]) for e in events] == [
        ("node.drained", "operator", "NCCL errors"),
        ("node.undrained", "operator", ""),
    ]


@pytest.mark.parametrize(
    ("state", "action", "to"),
    [
        (NodeState.READY, "quarantine", "quarantined"),
        (NodeState.QUARANTINED, "undrain", "ready"),
        (NodeState.DRAINING, "fail", "failed"),
        (NodeState.FAILED, "quarantine", "quarantined"),
    ],
)
def test_each_action_moves_the_node(ops, fleet, state, action, to):
    Node.objects.filter(hostname="euw1a-01").update(state=state)
    response = ops.post(f"{NODES_URL}/{node_id('euw1a-01')}/{action}", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == to


@pytest.mark.parametrize(
    ("state", "action"),
    [
        (NodeState.DRAINING, "drain"),
        (NodeState.READY, "undrain"),
        (NodeState.SANITIZING, "quarantine"),
        (NodeState.FAILED, "fail"),
        (NodeState.FAILED, "undrain"),
    ],
)
def test_a_change_the_table_forbids_is_409(ops, fleet, state, action):
    Node.objects.filter(hostname="euw1a-01").update(state=state)
    body = assert_problem(
        ops.post(f"{NODES_URL}/{node_id('euw1a-01')}/{action}", {}, format="json"), 409, "invalid_transition"
    )
    assert f"is {state}" in body["detail"]
    assert Node.objects.get(hostname="euw1a-01").state == state
    assert not AuditEvent.objects.filter(target_type="node").exists()


def test_a_bad_reason_is_a_field_error(ops, fleet):
    url = f"{NODES_URL}/{node_id('euw1a-01')}/drain"
    body = assert_problem(ops.post(url, {"reason": "x" * 501}, format="json"), 422, "validation_error")
    assert "reason" in body["errors"]
    body = assert_problem(ops.post(url, {"reason": ["a"]}, format="json"), 422, "validation_error")
    assert "reason" in body["errors"]
    assert Node.objects.get(hostname="euw1a-01").state == NodeState.READY


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_on_an_unknown_node_is_404(ops, fleet, action):
    assert_problem(ops.post(f"{NODES_URL}/999999/{action}", {}, format="json"), 404, "not_found")


# --- GET /regions ---------------------------------------------------------------------------------------------

REGIONS = [
    {
        "code": "eu-west",
        "name": "EU West",
        "jurisdiction": "EU",
        "halls": [{"code": "eu-west-1a", "fenced_for": None}, {"code": "eu-west-1b", "fenced_for": "EU"}],
    },
    {"code": "us-east", "name": "US East", "jurisdiction": "US", "halls": [{"code": "us-east-1a", "fenced_for": None}]},
]


@pytest.mark.parametrize("who", ["alice", "charlie", "operator", "finance", "compliance"])
def test_everyone_signed_in_reads_the_regions(api, request, fleet, who):
    response = api(request.getfixturevalue(who)).get(REGIONS_URL)
    assert response.status_code == 200, response.content
    assert response.json()["results"] == REGIONS


def test_a_tenant_member_with_a_read_only_key_reads_the_regions(api, bob, fleet):
    assert api(bob, scopes=("read",)).get(REGIONS_URL).json()["results"] == REGIONS


def test_regions_are_read_only(api, alice, fleet):
    assert_problem(api(alice).post(REGIONS_URL, {"code": "x"}, format="json"), 405, "method_not_allowed")
    assert_problem(api(alice).get(f"{REGIONS_URL}/eu-west"), 404, "not_found")
