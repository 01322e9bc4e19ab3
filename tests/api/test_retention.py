"""/api/v1/retention-policies: every category's effective retention, the owner's rules, the legal minimum, roles
and the cross-tenant rule."""

import pytest

from compliance.domain.retention import LEGAL_MINIMUM_DAYS, SEVEN_YEARS_DAYS, Category
from compliance.models import RetentionPolicy
from core.models import AuditEvent
from tests.support import assert_problem, teammate

URL = "/api/v1/retention-policies"


def by_category(response):
    assert response.status_code == 200, response.content
    return {row["category"]: row for row in response.json()}


def put(client, category, body):
    return client.put(f"{URL}/{category}", body, format="json")


def test_it_lists_every_category_with_the_product_defaults(api, alice):
    rows = by_category(api(alice).get(URL))
    assert set(rows) == {c.value for c in Category}
    assert rows["dataset"] == {
        "category": "dataset",
        "days": 365,
        "zero_retention": False,
        "source": "default",
        "legal_minimum_days": None,
    }
    assert rows["job_log"]["days"] == 90
    assert rows["invoice"] == {
        "category": "invoice",
        "days": SEVEN_YEARS_DAYS,
        "zero_retention": False,
        "source": "default",
        "legal_minimum_days": LEGAL_MINIMUM_DAYS["invoice"],
    }


def test_the_operators_setting_changes_the_defaults(api, alice, settings):
    settings.LADDER_RETENTION_DAYS = "dataset=400,job_log=14"
    rows = by_category(api(alice).get(URL))
    assert (rows["dataset"]["days"], rows["job_log"]["days"]) == (400, 14)
    assert rows["dataset"]["source"] == "default"


def test_the_owner_sets_days_per_category(api, alice, acme):
    client = api(alice)
    response = put(client, "dataset", {"days": 30})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "category": "dataset",
        "days": 30,
        "zero_retention": False,
        "source": "tenant",
        "legal_minimum_days": None,
    }
    rows = by_category(client.get(URL))
    assert rows["dataset"]["days"] == 30
    assert rows["dataset"]["source"] == "tenant"
    assert rows["checkpoint"]["source"] == "default"
    assert client.get(f"{URL}/dataset").json() == response.json()
    event = AuditEvent.objects.get(action="retention_policy.set")
    assert event.actor_label == "alice"
    assert event.data == {"category": "dataset", "days": 30, "zero_retention": False}
    assert RetentionPolicy.objects.get(tenant=acme).days == 30


def test_the_owner_asks_for_zero_retention_and_back(api, alice):
    client = api(alice)
    body = put(client, "inference_payload", {"zero_retention": True}).json()
    assert body["days"] is None
    assert body["zero_retention"] is True
    assert body["source"] == "tenant"
    body = put(client, "inference_payload", {"days": 3, "zero_retention": False}).json()
    assert body["days"] == 3
    assert body["zero_retention"] is False


def test_finance_records_keep_their_legal_minimum(api, alice):
    client = api(alice)
    for category in ("invoice", "usage_record"):
        body = assert_problem(put(client, category, {"days": 365}), 422, "below_legal_minimum")
        assert "days" in body["errors"]
        assert_problem(put(client, category, {"zero_retention": True}), 422, "below_legal_minimum")
    assert not RetentionPolicy.objects.exists()
    longer = put(client, "invoice", {"days": 4000})
    assert longer.status_code == 200
    assert longer.json()["days"] == 4000


def test_bad_rules_get_field_errors(api, alice):
    client = api(alice)
    for body in ({}, {"days": 30, "zero_retention": True}, {"zero_retention": False}):
        refused = assert_problem(put(client, "dataset", body), 422, "validation_error")
        assert "days" in refused["errors"]
    for days in (0, -5, "soon", 10**7):
        refused = assert_problem(put(client, "dataset", {"days": days}), 422, "validation_error")
        assert "days" in refused["errors"]
    assert not RetentionPolicy.objects.exists()


def test_an_unknown_category_is_404(api, alice):
    client = api(alice)
    assert_problem(put(client, "gossip", {"days": 30}), 404, "not_found")
    assert_problem(client.get(f"{URL}/gossip"), 404, "not_found")


@pytest.mark.parametrize("role", ["member", "admin", "viewer", "billing"])
def test_only_the_owner_sets_retention(alice, acme, role):
    client = teammate(acme, role)
    assert by_category(client.get(URL))["dataset"]["days"] == 365
    assert_problem(put(client, "dataset", {"days": 30}), 403, "permission_denied")
    assert not RetentionPolicy.objects.exists()


def test_bob_reads_but_does_not_set(api, bob):
    client = api(bob)
    assert client.get(URL).status_code == 200
    assert_problem(put(client, "dataset", {"days": 30}), 403, "permission_denied")


def test_staff_without_a_tenant_are_refused(api, compliance, finance):
    for user in (compliance, finance):
        assert_problem(api(user).get(URL), 403, "tenant_required")
        assert_problem(put(api(user), "dataset", {"days": 30}), 403, "tenant_required")


def test_one_tenants_rules_never_touch_anothers(api, alice, charlie, acme, globex):
    assert put(api(charlie), "dataset", {"days": 10}).status_code == 200
    assert put(api(alice), "job_log", {"days": 7}).status_code == 200
    acme_rows = by_category(api(alice).get(URL))
    globex_rows = by_category(api(charlie).get(URL))
    assert (acme_rows["dataset"]["days"], acme_rows["dataset"]["source"]) == (365, "default")
    assert (globex_rows["dataset"]["days"], globex_rows["dataset"]["source"]) == (10, "tenant")
    assert (globex_rows["job_log"]["days"], globex_rows["job_log"]["source"]) == (90, "default")
    assert RetentionPolicy.objects.get(tenant=globex).category == "dataset"
    assert RetentionPolicy.objects.get(tenant=acme).category == "job_log"
