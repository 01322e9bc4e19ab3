"""The OpenAPI schema generates cleanly and the interactive docs are served locally."""

import pytest
from django.core.management import call_command


def test_the_schema_generates_with_no_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for path in ("/api/v1/tenant", "/api/v1/members", "/api/v1/api-keys/{id}", "/api/v1/compliance/audit-events"):
        assert f"{path}:" in text


@pytest.mark.django_db
def test_the_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert schema.json()["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert b"cdn.jsdelivr" not in docs.content  # assets ship with the product


def _schema(tmp_path) -> dict:
    import json

    out = tmp_path / "schema.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(out))
    return json.loads(out.read_text())


def _operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("get", "put", "post", "patch", "delete"):
                yield path, method, operation


def test_every_operation_has_a_unique_id_and_a_tag_of_its_resource(tmp_path):
    schema = _schema(tmp_path)
    ids = [operation["operationId"] for _, _, operation in _operations(schema)]
    assert len(ids) == len(set(ids))
    assert all(not name.startswith("api_v1") for name in ids)  # the path prefix is not part of the name
    tags = {path: operation["tags"] for path, _, operation in _operations(schema)}
    assert tags["/api/v1/allocations"] == ["allocations"]
    assert tags["/api/v1/volumes/{id}/snapshots"] == ["volumes"]


def test_every_error_answer_is_described_as_problem_json(tmp_path):
    schema = _schema(tmp_path)
    assert {"type", "title", "status", "detail", "code"} <= set(schema["components"]["schemas"]["Problem"]["required"])
    for path, method, operation in _operations(schema):
        errors = {int(code): answer for code, answer in operation["responses"].items() if int(code) >= 400}
        assert 429 in errors, (method, path)
        if "{" in path:
            assert 404 in errors, (method, path)
        if operation.get("security") != [{}]:
            assert {401, 403} <= errors.keys(), (method, path)
        for code, answer in errors.items():
            content = answer["content"]
            assert list(content) == ["application/problem+json"], (method, path, code)
            assert content["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
    refused = schema["paths"]["/api/v1/allocations"]["post"]["responses"]["409"]
    assert refused["description"] == "Refused; see `code` and `reasons`."  # a declared answer keeps its words


def test_no_enum_is_anonymous(tmp_path):
    """A generator names an inline enum after the operation that holds it; every enum here is a named component,
    one per set of values."""
    schema = _schema(tmp_path)
    for path, method, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            assert "enum" not in str(parameter["schema"]), (method, path, parameter["name"])
    components = schema["components"]["schemas"]
    named = [frozenset(component["enum"]) for component in components.values() if "enum" in component]
    assert len(named) == len(set(named))
    params = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/volumes"]["get"]["parameters"]}
    assert params["state"] == {"$ref": "#/components/schemas/VolumeStateEnum"}
    assert "AsEnum" not in components
    assert "SecretExposedAsEnum" in components
