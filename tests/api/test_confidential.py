"""A confidential VM is placed only on a host whose CPU TEE is declared: otherwise 409 ``cc_tee_unknown``, and such
hosts are not offered."""

from __future__ import annotations

from provisioning.models import Allocation, Node
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import small_fleet

URL = "/api/v1/allocations"
H200 = "H200-141GB"


def sovereign(client):
    residency = {"regions": None, "jurisdictions": ["EU"], "sovereign": True}
    assert client.patch("/api/v1/tenant", {"residency": residency}, format="json").status_code == 200


def confidential_offering(client):
    rows = client.get("/api/v1/offerings").json()
    return next(r for r in rows if (r["rung"], r["gpu_model"], r["region"]) == ("confidential_vm", H200, "eu-west"))


def test_a_cc_request_only_an_unknown_tee_host_could_serve_is_refused_409(api, alice, db):
    fleet_load(document=small_fleet(), actor=SYSTEM)
    # A host in CC mode registered before its TEE was known (a fleet imported from a cluster whose node feature
    # discovery had not labelled it yet, or a row older than the rule).
    Node.objects.filter(cc_mode=True).update(cpu_tee="")
    client = api(alice)
    sovereign(client)
    assert confidential_offering(api())["sovereign_available"] == 0
    body = {"name": "enclave", "rung": "confidential_vm", "gpu_model": H200, "gpus": 1}
    refused = assert_problem(client.post(URL, body, format="json"), 409, "cc_tee_unknown")
    assert "no declared CPU TEE" in refused["detail"]
    assert refused["reasons"][0]["code"] == "cc_tee_unknown"
    assert not Allocation.objects.exists()


def test_with_the_tee_declared_the_same_request_is_placed_and_offered(api, alice, db):
    fleet_load(document=small_fleet(), actor=SYSTEM)  # euw1b-01 declares "tdx"
    client = api(alice)
    sovereign(client)
    assert confidential_offering(api())["sovereign_available"] == 8
    body = {"name": "enclave", "rung": "confidential_vm", "gpu_model": H200, "gpus": 1}
    made = client.post(URL, body, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["state"] in ("placed", "provisioning", "running", "failed")
