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
