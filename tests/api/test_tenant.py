"""GET|PATCH /api/v1/tenant — the caller's own tenant."""

from core.models import AuditEvent
from tests.support import assert_problem

URL = "/api/v1/tenant"


def test_it_shows_the_callers_tenant(api, alice, charlie):
    response = api(alice).get(URL)
    assert response.status_code == 200
    assert response.json()["slug"] == "acme"
    assert api(charlie).get(URL).json()["slug"] == "globex"


def test_it_renames_the_tenant_and_audits_it(api, alice):
    response = api(alice).patch(URL, {"name": "Acme Labs"}, format="json")
    assert response.status_code == 200
    assert response.json()["name"] == "Acme Labs"
    event = AuditEvent.objects.get(action="tenant.updated")
    assert event.data == {"name": {"old": "Acme Robotics", "new": "Acme Labs"}}
    assert event.actor_label == "alice"
    assert event.api_key_prefix


def test_it_refuses_a_member_renaming_the_tenant(api, bob):
    assert_problem(api(bob).patch(URL, {"name": "Mine"}, format="json"), 403, "permission_denied")


def test_it_refuses_anonymous_callers(api, acme):
    body = assert_problem(api().get(URL), 401, "not_authenticated")
    assert "tenant" not in body


def test_it_refuses_a_bad_key(api, acme):
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Bearer ldr_deadbeef_nope")
    assert_problem(client.get(URL), 401, "authentication_failed")


def test_it_refuses_staff_who_belong_to_no_tenant(api, operator):
    assert_problem(api(operator).get(URL), 403, "tenant_required")


def test_it_rejects_a_blank_name_with_field_errors(api, alice):
    body = assert_problem(api(alice).patch(URL, {"name": ""}, format="json"), 422, "validation_error")
    assert "name" in body["errors"]


def test_it_rejects_malformed_json(api, alice):
    response = api(alice).patch(URL, data="{not json", content_type="application/json")
    assert_problem(response, 400, "parse_error")


def test_a_read_only_key_cannot_write(api, alice):
    body = assert_problem(
        api(alice, scopes=("read",)).patch(URL, {"name": "x"}, format="json"), 403, "insufficient_scope"
    )
    assert "read scope" in body["detail"]


def test_a_closing_tenant_can_read_but_not_write(api, alice, acme):
    acme.state = "closing"
    acme.save()
    client = api(alice)
    assert client.get(URL).status_code == 200
    assert_problem(client.patch(URL, {"name": "x"}, format="json"), 403, "tenant_not_active")


def test_a_suspended_tenant_reads_but_cannot_change_its_settings(api, alice, acme):
    # It may still stop its work and set a budget; new capacity is refused with 402 (tests/billing/test_webhooks.py).
    acme.state = "suspended"
    acme.save()
    client = api(alice)
    assert client.get(URL).status_code == 200
    body = assert_problem(client.patch(URL, {"name": "x"}, format="json"), 403, "tenant_not_active")
    assert body["detail"] == "The tenant is suspended: its settings cannot change."


def test_a_closed_tenants_keys_stop_working(api, alice, acme):
    client = api(alice)
    acme.state = "closed"
    acme.save()
    assert_problem(client.get(URL), 401, "authentication_failed")


def test_unsupported_methods_answer_405_not_403(api, alice, bob):
    assert_problem(api(bob).put(URL, {"name": "x"}, format="json"), 405, "method_not_allowed")
    assert_problem(api(alice).post(URL, {"name": "x"}, format="json"), 405, "method_not_allowed")
    assert api(bob).head(URL).status_code == 200
    assert api(bob).options(URL).status_code == 200
