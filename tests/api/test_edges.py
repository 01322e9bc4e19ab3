"""The API at its edges: fields it does not know, bodies that are not objects, paths it does not serve."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.conf import settings
from django.middleware.csrf import REASON_NO_CSRF_COOKIE
from django.test import Client, RequestFactory
from django.utils.module_loading import import_string
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers
from rest_framework.test import APIClient

from api.allocations import AllocationRequestSerializer
from api.models import IdempotencyRecord
from api.serializers import StrictSerializer
from provisioning.models import Allocation, Node, Region
from provisioning.services.attestation import attestation_credential
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.data import asset, regions
from tests.support.fleet_documents import small_fleet

H100 = "H100-SXM-80GB"

# Every POST, PUT and PATCH of the API, with who may call it (so the call gets past the permissions).
WRITES = [
    ("PATCH", "/api/v1/tenant", "alice"),
    ("PUT", "/api/v1/data/capture-policy", "alice"),
    ("POST", "/api/v1/tenant/close", "alice"),
    ("POST", "/api/v1/members", "alice"),
    ("PATCH", "/api/v1/members/{id}", "alice"),
    ("POST", "/api/v1/api-keys", "alice"),
    ("POST", "/api/v1/endpoint-tokens", "alice"),
    ("POST", "/api/v1/endpoint-tokens/rotate", "alice"),
    ("POST", "/api/v1/allocations", "alice"),
    ("PUT", "/api/v1/budget", "alice"),
    ("POST", "/api/v1/data-assets", "alice"),
    ("POST", "/api/v1/data-assets/{id}/move", "alice"),
    ("POST", "/api/v1/data-assets/{id}/cancel-shredding", "alice"),
    ("PUT", "/api/v1/retention-policies/{category}", "alice"),
    ("POST", "/api/v1/erasure-requests", "alice"),
    ("POST", "/api/v1/compliance/audit-checkpoints", "compliance"),
    ("POST", "/api/v1/compliance/legal-holds", "compliance"),
    ("POST", "/api/v1/compliance/legal-holds/preview", "compliance"),
    ("POST", "/api/v1/compliance/legal-holds/{id}/release", "compliance"),
    ("POST", "/api/v1/ops/fleet", "operator"),
    ("POST", "/api/v1/ops/cost-basis", "operator"),
    ("POST", "/api/v1/ops/storage-prices", "operator"),
    ("POST", "/api/v1/ops/storage-cost-basis", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/drain", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/undrain", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/quarantine", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/fail", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/xid", "operator"),
    ("POST", "/api/v1/ops/clusters", "operator"),
    ("POST", "/api/v1/ops/clusters/{name}/test", "operator"),
    ("POST", "/api/v1/ops/clusters/{name}/sync", "operator"),
    ("POST", "/api/v1/ops/defragment", "operator"),
    ("POST", "/api/v1/ops/reconcile", "operator"),
    ("POST", "/api/v1/finance/exports", "finance"),
    ("POST", "/api/v1/ssh-keys", "alice"),
    ("POST", "/api/v1/secrets", "alice"),
    ("PUT", "/api/v1/secrets/{name}", "alice"),
    ("POST", "/api/v1/volumes", "alice"),
    ("POST", "/api/v1/reservations", "operator"),
    ("POST", "/api/v1/reservations/{id}/end", "operator"),
    ("PATCH", "/api/v1/volumes/{id}", "alice"),
    ("POST", "/api/v1/volumes/{id}/snapshots", "alice"),
    ("PUT", "/api/v1/ops/tenants/{slug}/quota", "operator"),
    ("PUT", "/api/v1/ops/fleet/target", "operator"),
    ("POST", "/api/v1/ops/nodes/{id}/attestation-key", "operator"),
    ("POST", "/api/v1/attestation/{allocation_id}/challenge", "guest"),
    ("POST", "/api/v1/attestation/{allocation_id}/evidence", "guest"),
    ("POST", "/api/v1/finance/pushes/{id}/retry", "finance"),
    ("POST", "/api/v1/finance/reconciliation-runs", "finance"),
]
GUEST_ALLOCATION = 424242  # the confidential allocation whose guest "guest" plays


def _schema() -> tuple[SchemaGenerator, dict[str, Any]]:
    generator = SchemaGenerator()
    return generator, generator.get_schema(request=None, public=True)


@pytest.fixture
def caller(request: pytest.FixtureRequest, api: Any) -> Any:
    """``caller("alice")``: a client with a fresh read-write key of that standard user; ``caller("guest")``: the
    attestation agent of a confidential VM, with its allocation's credential."""

    def make(name: str) -> Any:
        if name != "guest":
            return api(request.getfixturevalue(name))
        fleet_load(document=small_fleet(), actor=SYSTEM)
        host = Node.objects.get(cc_mode=True)
        Allocation.objects.create(
            pk=GUEST_ALLOCATION,
            tenant=request.getfixturevalue("acme"),
            name="enclave",
            rung="confidential_vm",
            performance="whole_gpu",
            security="confidential_vm",
            gpu_model=host.gpu_model,
            hall=host.hall,
            state="provisioning",
            spec={},
            quota_milli=1000,
            provisioner="simulated",
        )
        client = api()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {attestation_credential(GUEST_ALLOCATION)}")
        return client

    return make


@pytest.fixture
def write_url(alice: Any) -> Any:
    """A WRITES path with real values: alice's own membership as the id (the member update looks it up before
    reading the body; every other write reads its body first)."""
    values = {
        "id": alice.membership.pk,
        "seq": 1,
        "name": "frankfurt-a",
        "category": "dataset",
        "slug": "acme",
        "asset_id": 1,
        "allocation_id": GUEST_ALLOCATION,
    }
    return lambda template: template.format(**values)


# --- unknown fields ---------------------------------------------------------------------------------------------


def test_the_writes_table_lists_every_write_of_the_api():
    _, schema = _schema()
    served = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"post", "put", "patch"}
    }
    assert served == {(method, path) for method, path, _ in WRITES}


def _request_serializers(serializer: serializers.BaseSerializer[Any]) -> Any:
    """The serializer and every serializer nested in its writable fields."""
    yield serializer
    for field in serializer.fields.values():  # type: ignore[attr-defined]
        if field.read_only:
            continue
        if isinstance(field, serializers.ListSerializer):
            field = field.child
        if isinstance(field, serializers.BaseSerializer):
            yield from _request_serializers(field)


def test_every_request_body_refuses_unknown_fields_at_every_depth():
    generator, schema = _schema()
    checked = set()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if "requestBody" not in operation:
                continue
            ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            found = generator.registry[(ref.rsplit("/", 1)[1], "schemas")].object
            body = found() if isinstance(found, type) else found
            for serializer in _request_serializers(body):
                assert isinstance(serializer, StrictSerializer), f"{method.upper()} {path}: {type(serializer)}"
                checked.add(type(serializer).__name__)
    assert {"AllocationRequestSerializer", "ShareSerializer", "ResidencySerializer", "FleetNodeSerializer"} <= checked


@pytest.mark.parametrize(("method", "template", "who"), WRITES)
def test_every_write_refuses_a_field_it_does_not_know(caller, write_url, method, template, who):
    response = caller(who).generic(
        method, write_url(template), '{"surely_not_a_field": 1}', content_type="application/json"
    )
    body = assert_problem(response, 422, "validation_error")
    assert "surely_not_a_field" in body["errors"]


def test_a_misspelt_field_is_refused_not_dropped(api, alice):
    body = {"name": "train", "rung": "container", "gpu_model": H100, "gpus": 1, "gpu_modle": H100}
    response = api(alice).post("/api/v1/allocations", body, format="json")
    problem = assert_problem(response, 422, "validation_error")
    assert problem["errors"] == {"gpu_modle": ["Unknown field."]}
    assert problem["detail"] == "gpu_modle: Unknown field."
    assert not Allocation.objects.exists()


def test_unknown_fields_are_named_beside_the_known_fields_errors(api, alice):
    body = {"username": "dora", "email": "dora@acme.test", "rolle": "viewer", "team": "ml"}
    problem = assert_problem(api(alice).post("/api/v1/members", body, format="json"), 422, "validation_error")
    assert problem["errors"] == {
        "rolle": ["Unknown field."],
        "team": ["Unknown field."],
        "role": ["This field is required."],
    }


def test_nested_bodies_refuse_unknown_fields(api, alice):
    client = api(alice)
    share = {"mode": "time_slicing", "fraction": "0.5", "fractoin": "0.5"}
    body = {"name": "s", "rung": "container", "gpu_model": H100, "share": share}
    problem = assert_problem(client.post("/api/v1/allocations", body, format="json"), 422, "validation_error")
    assert problem["errors"] == {"share.fractoin": ["Unknown field."]}

    patch = {"residency": {"regoins": ["eu-west"]}, "isolation": {"dedicated": True}}
    problem = assert_problem(client.patch("/api/v1/tenant", patch, format="json"), 422, "validation_error")
    assert problem["errors"] == {"residency.regoins": ["Unknown field."], "isolation.dedicated": ["Unknown field."]}


def test_each_body_is_validated_with_its_own_copies_of_the_declared_fields():
    """Bodies copy their declared fields shallowly (api/serializers.py): every copy, a list's child and a nested
    body's own fields included, is bound to its body and reads that body's context; the declared ones stay unbound."""
    first: Any = AllocationRequestSerializer(data={"name": "a"}, context={"n": 1})
    second: Any = AllocationRequestSerializer(data={"name": ""}, context={"n": 2})
    assert first.fields["name"] is not second.fields["name"]
    assert first.fields["gpu_models"].child.parent is first.fields["gpu_models"]
    assert first.fields["gpu_models"].child.context == {"n": 1}
    assert second.fields["workload"].fields["env"].child.fields["name"].context == {"n": 2}
    assert not first.is_valid()
    assert not second.is_valid()
    assert "name" not in first.errors
    assert second.errors["name"] == ["This field may not be blank."]
    declared: Any = AllocationRequestSerializer._declared_fields
    assert declared["name"].parent is None
    assert declared["gpu_models"].child.parent is declared["gpu_models"]


def test_a_read_only_field_sent_back_is_unknown(api, alice, acme):
    client = api(alice)
    tenant = client.get("/api/v1/tenant").json()
    response = client.patch("/api/v1/tenant", {"name": "Acme Labs", "id": tenant["id"]}, format="json")
    assert assert_problem(response, 422, "validation_error")["errors"] == {"id": ["Unknown field."]}
    acme.refresh_from_db()
    assert acme.name == "Acme Robotics"


def test_an_action_without_a_body_refuses_one_with_fields(api, alice, acme):
    client = api(alice)
    response = client.post("/api/v1/tenant/close", {"confirm": True}, format="json")
    assert assert_problem(response, 422, "validation_error")["errors"] == {"confirm": ["Unknown field."]}
    acme.refresh_from_db()
    assert acme.state == "active"

    regions()
    live = asset(acme)
    # An empty object is no body at all: the action runs (and answers that the asset is not being shredded).
    empty = client.post(f"/api/v1/data-assets/{live.pk}/cancel-shredding", {}, format="json")
    assert_problem(empty, 409, "not_shredding")


# --- every /api/ path answers problem+json ------------------------------------------------------------------------

METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]


def _assert_problem_json(response: Any, method: str, path: str) -> None:
    where = f"{method} {path}: {response.status_code} {response.content[:200]!r}"
    assert response["Content-Type"] == "application/problem+json", where
    if method != "HEAD":
        body = response.json()
        assert body["status"] == response.status_code, where
        assert body["code"], where


def _session(user: Any) -> APIClient:
    """A browser-like client: signed in by session cookie, CSRF enforced as in production."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", ["/api/v1/no-such-thing", "/api/v1/tenant/", "/api/nothing/here"])
def test_an_unknown_api_path_is_a_problem_404_for_any_method_and_caller(api, alice, method, path):
    callers = {
        "anonymous": APIClient(enforce_csrf_checks=True),
        "session": _session(alice),
        "api key": api(alice),
    }
    for name, client in callers.items():
        response = client.generic(method, path, "{}", content_type="application/json")
        assert response.status_code == 404, (name, response.content[:200])
        _assert_problem_json(response, method, path)


def test_a_session_write_without_the_csrf_token_is_a_problem_403(alice, acme):
    client = _session(alice)
    response = client.patch("/api/v1/tenant", {"name": "Acme Labs"}, format="json")
    assert_problem(response, 403, "csrf_failed")
    acme.refresh_from_db()
    assert acme.name == "Acme Robotics"

    client.get("/admin/login/")  # any page that sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.patch("/api/v1/tenant", {"name": "Acme Labs"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200, response.content


def test_django_csrf_refusals_are_problem_json_under_api_and_html_elsewhere(alice):
    failure = import_string(settings.CSRF_FAILURE_VIEW)  # as CsrfViewMiddleware finds it
    response = failure(RequestFactory().post("/api/v1/tenant"), reason=REASON_NO_CSRF_COOKIE)
    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    body = json.loads(response.content)
    assert (body["code"], body["status"]) == ("csrf_failed", 403)
    assert REASON_NO_CSRF_COOKIE in body["detail"]

    admin = Client(enforce_csrf_checks=True).post("/admin/login/", {"username": "alice", "password": "pw"})
    assert admin.status_code == 403
    assert admin["Content-Type"].startswith("text/html")


def test_every_api_path_answers_its_errors_as_problem_json(alice, write_url):
    _, schema = _schema()
    paths = [write_url(path) for path in schema["paths"]] + ["/api/schema/", "/api/docs/"]
    callers = {"anonymous": APIClient(enforce_csrf_checks=True), "session": _session(alice)}
    checked = 0
    for path in paths:
        for method in METHODS:
            for client in callers.values():
                response = client.generic(method, path, "{}", content_type="application/json")
                if response.status_code >= 400:
                    _assert_problem_json(response, method, path)
                    checked += 1
    assert checked > 300


# --- bodies the parser refuses ----------------------------------------------------------------------------------


def _post(client: Any, path: str, raw: str, **headers: Any) -> Any:
    return client.generic("POST", path, raw, content_type="application/json", **headers)


@pytest.mark.parametrize("depth", [65, 900, 5000])
def test_json_nested_too_deep_is_a_parse_error(api, alice, depth):
    response = _post(api(alice), "/api/v1/members", "[" * depth + "]" * depth, HTTP_IDEMPOTENCY_KEY=f"deep-{depth}")
    assert "nest deeper than 64 levels" in assert_problem(response, 400, "parse_error")["detail"]
    assert not IdempotencyRecord.objects.exists()


def test_json_nested_64_levels_deep_reaches_the_validation(api, alice):
    raw = '{"username": ' + "[" * 63 + "]" * 63 + ', "email": "dora@acme.test", "role": "viewer"}'
    response = _post(api(alice), "/api/v1/members", raw, HTTP_IDEMPOTENCY_KEY="deep-64")
    assert "username" in assert_problem(response, 422, "validation_error")["errors"]


def test_an_unpaired_surrogate_is_a_parse_error_naming_where(api, alice, acme):
    client = api(alice)
    raw = '{"username": "dora\\ud800", "email": "dora@acme.test", "role": "viewer"}'
    response = _post(client, "/api/v1/members", raw, HTTP_IDEMPOTENCY_KEY="lone")
    assert assert_problem(response, 400, "parse_error")["detail"] == (
        "JSON parse error - the string at username holds an unpaired surrogate (\\ud800): it is not Unicode text."
    )
    assert not IdempotencyRecord.objects.exists()
    assert_problem(_post(client, "/api/v1/members", '{"\\udc00": 1}'), 400, "parse_error")
    assert_problem(_post(client, "/api/v1/members", '"\\udfff"'), 400, "parse_error")

    # A surrogate pair is one character like any other.
    response = client.generic(
        "PATCH", "/api/v1/tenant", '{"name": "Acme \\ud83d\\ude80"}', content_type="application/json"
    )
    assert response.status_code == 200, response.content
    acme.refresh_from_db()
    assert acme.name == "Acme \N{ROCKET}"


def test_a_nul_character_in_any_string_is_refused_naming_where(api, alice, operator):
    document = small_fleet()
    document["regions"][0]["name"] = "EU\x00West"
    document["regions"][1]["halls"][0]["nodes"][0]["versions"]["driver"] = "\x00"
    response = api(operator).post("/api/v1/ops/fleet", document, format="json")
    assert assert_problem(response, 422, "validation_error")["errors"] == {
        "regions.0.name": ["Null characters are not allowed."],
        "regions.1.halls.0.nodes.0.versions.driver": ["Null characters are not allowed."],
    }
    assert not Region.objects.exists()

    # The refusal names the place without echoing the character (PostgreSQL could not store the answer for the
    # Idempotency-Key either; a choice field's error used to quote the value).
    invite = {"username": "dora", "email": "dora@acme.test", "role": "\x00", "a\x00b": 1}
    response = api(alice).post("/api/v1/members", invite, format="json", HTTP_IDEMPOTENCY_KEY="nul")
    body = assert_problem(response, 422, "validation_error")
    assert body["errors"] == {
        "role": ["Null characters are not allowed."],
        "a\\u0000b": ["Null characters are not allowed."],
    }
    assert "\x00" not in response.content.decode()


# --- NUL in what names a thing -----------------------------------------------------------------------------------
# PostgreSQL refuses a string holding NUL even in a comparison, so these were 500s there; they run on SQLite by
# default and on PostgreSQL with DATABASE_URL set.

NUL_PATHS = [
    ("GET", "/api/v1/ops/clusters/%00", "operator"),
    ("GET", "/api/v1/ops/clusters/frankfurt%00a", "operator"),
    ("POST", "/api/v1/ops/clusters/%00/test", "operator"),
    ("GET", "/api/v1/ops/nodes/1%00", "operator"),
    ("GET", "/api/v1/allocations/%00", "alice"),
    ("DELETE", "/api/v1/members/%00", "alice"),
    ("GET", "/api/v1/data-assets/%00/content", "alice"),
    ("GET", "/api/v1/retention-policies/dataset%00", "alice"),
    ("PUT", "/api/v1/retention-policies/%00", "alice"),
    ("GET", "/api/v1/compliance/legal-holds/%00", "compliance"),
]


@pytest.mark.parametrize(("method", "path", "who"), NUL_PATHS)
def test_a_path_parameter_holding_nul_names_nothing(caller, method, path, who):
    response = caller(who).generic(method, path, "{}", content_type="application/json")
    assert_problem(response, 404, "not_found")


def test_a_nul_path_parameter_still_needs_credentials_first():
    assert_problem(APIClient().get("/api/v1/ops/clusters/%00"), 401, "not_authenticated")


def test_an_api_key_holding_nul_is_unknown():
    response = APIClient().get("/api/v1/tenant", HTTP_AUTHORIZATION="Bearer ldr_0000\x000000_secret")
    assert_problem(response, 401, "authentication_failed")


@pytest.mark.parametrize("key", ["a\x00b", "tab\there", "\x7f"])
def test_an_idempotency_key_holding_a_control_character_is_refused(api, alice, key):
    invite = {"username": "dora", "email": "dora@acme.test", "role": "viewer"}
    response = api(alice).post("/api/v1/members", invite, format="json", HTTP_IDEMPOTENCY_KEY=key)
    assert "Idempotency-Key" in assert_problem(response, 422, "validation_error")["errors"]
    assert not IdempotencyRecord.objects.exists()


# --- bodies that are not objects, numbers out of range ------------------------------------------------------------

NOT_OBJECTS = ["[]", "[{}]", '"x"', "null", "1", "true", "1e999"]


@pytest.mark.parametrize(("method", "template", "who"), WRITES)
def test_every_write_refuses_a_body_that_is_not_an_object(caller, write_url, method, template, who):
    client = caller(who)
    for raw in NOT_OBJECTS:
        headers = {"HTTP_IDEMPOTENCY_KEY": f"not-an-object-{raw}"} if method == "POST" else {}
        response = client.generic(method, write_url(template), raw, content_type="application/json", **headers)
        assert response.status_code == 422, (raw, response.content)
        assert_problem(response, 422, "validation_error")


def test_an_id_beyond_a_bigint_is_invalid_not_a_crash(api, alice, acme):
    regions()
    client = api(alice)
    huge = 10**30
    made = {"name": "n", "category": "dataset", "region": "eu-west", "size_bytes": 1, "derived_from": [huge]}
    problem = assert_problem(client.post("/api/v1/data-assets", made, format="json"), 422, "validation_error")
    assert list(problem["errors"]) == ["derived_from.0"]
    erase = {"assets": [asset(acme).pk, huge]}
    problem = assert_problem(client.post("/api/v1/erasure-requests", erase, format="json"), 422, "validation_error")
    assert list(problem["errors"]) == ["assets.1"]
