"""/api/v1/finance/margin and /finance/budgets (finance staff) and /api/v1/ops/cost-basis (operators keep the cost
book; finance reads it). Finance reads every tenant's billing and changes no tenant's data."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.models import BillingAccount, CostBasis
from billing.services.ledger import windows_close
from core.models import AuditEvent
from tests.support import assert_problem
from tests.support.billing import BASE, at, load_fleet, place, price, run, stop

MARGIN = "/api/v1/finance/margin"
BUDGETS = "/api/v1/finance/budgets"
COST_BASIS = "/api/v1/ops/cost-basis"
BASIS = {
    "gpu_model": "H100-SXM-80GB",
    "hall": "eu-west-1a",
    "effective_from": BASE.isoformat(),
    "capex": "1.00",
    "power": "0.20",
    "space": "0.10",
    "network": "0.05",
}


@pytest.fixture
def fleet(db):
    load_fleet()


def test_operators_add_to_the_cost_book_and_finance_reads_it(api, operator, finance, fleet):
    response = api(operator).post(COST_BASIS, BASIS, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["per_gpu_hour"] == "1.350000"
    assert body["currency"] == "usd"
    event = AuditEvent.objects.get(action="billing.cost_basis_added")
    assert event.data["hall"] == "eu-west-1a"
    assert event.actor_id == str(operator.pk)
    listed = api(finance).get(COST_BASIS)
    assert listed.status_code == 200
    assert [row["hall"] for row in listed.json()["results"]] == ["eu-west-1a"]
    assert_problem(api(finance).post(COST_BASIS, BASIS, format="json"), 403, "permission_denied")


@pytest.mark.parametrize(
    ("change", "status", "code", "field"),
    [
        ({"power": "-0.01"}, 422, "validation_error", "power"),
        ({"hall": "nowhere"}, 422, "validation_error", "hall"),
        ({"gpu_model": "Z9"}, 422, "validation_error", "gpu_model"),
        ({"currency": "USD"}, 422, "validation_error", "currency"),
        ({"effective_from": "yesterday"}, 422, "validation_error", "effective_from"),
    ],
)
def test_a_bad_cost_basis_is_refused_naming_the_field(api, operator, fleet, change, status, code, field):
    body = assert_problem(api(operator).post(COST_BASIS, {**BASIS, **change}, format="json"), status, code)
    assert field in str(body)
    assert not CostBasis.objects.exists()


def test_a_second_entry_at_the_same_moment_is_a_conflict(api, operator, fleet):
    assert api(operator).post(COST_BASIS, BASIS, format="json").status_code == 201
    assert_problem(api(operator).post(COST_BASIS, BASIS, format="json"), 409, "cost_basis_exists")
    assert CostBasis.objects.count() == 1


def test_finance_sees_revenue_cost_and_margin_per_rung(api, operator, finance, acme, fleet):
    api(operator).post(COST_BASIS, BASIS, format="json")
    price("2.40")
    stop(run(place(acme, gpus=2), at(0)), at(30))  # a GPU-hour at 2.40, costing 1.35
    windows_close(now=at(120))
    response = api(finance).get(MARGIN, {"from": "2026-11", "to": "2026-11"})
    assert response.status_code == 200, response.content
    body = response.json()
    [row] = body["rungs"]
    assert row == {
        "month": "2026-11",
        "rung": "container",
        "gpu_model": "H100-SXM-80GB",
        "region": "eu-west",
        "currency": "usd",
        "revenue": "2.4000",
        "allocated_gpu_hours": "1.000",
        "allocated_cost": "1.3500",
        "gross_margin": "1.0500",
        "margin_pct": "43.8",
        "uncosted_gpu_hours": "0.000",
    }
    assert body["totals"][0]["revenue"] == "2.4000"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-13"}, "from"),
        ({"from": "Nov"}, "from"),
        ({"from": "2026-11", "to": "2026-10"}, "to"),
        ({"from": "2020-01", "to": "2026-11"}, "to"),
    ],
)
def test_a_bad_month_is_refused(api, finance, params, field):
    body = assert_problem(api(finance).get(MARGIN, params), 422, "validation_error")
    assert field in str(body)


def test_budgets_list_tenants_against_their_budget_most_used_first(api, finance, acme, globex, fleet, time_machine):
    time_machine.move_to(at(90), tick=False)
    price("2.40")
    BillingAccount.objects.filter(tenant=acme).update(budget_monthly=Decimal("2.00"), budget_hard_stop=True)
    BillingAccount.objects.filter(tenant=globex).update(budget_monthly=Decimal("100.00"))
    stop(run(place(acme, gpus=1), at(0)), at(60))  # 2.40 spent of 2.00
    rows = api(finance).get(BUDGETS).json()
    assert [(r["tenant"], r["over"], r["used_pct"]) for r in rows] == [
        ("acme", True, "120.0"),
        ("globex", False, "0.0"),
    ]
    assert [r["tenant"] for r in api(finance).get(BUDGETS, {"over": "true"}).json()] == ["acme"]
    assert_problem(api(finance).get(BUDGETS, {"over": "maybe"}), 422, "validation_error")


@pytest.mark.parametrize("url", [MARGIN, BUDGETS, COST_BASIS])
def test_tenants_never_see_finance(api, alice, url):
    assert api(alice).get(url).status_code == 403


@pytest.mark.parametrize("url", [MARGIN, BUDGETS])
def test_operators_and_compliance_see_no_revenue(api, operator, compliance, url):
    assert api(operator).get(url).status_code == 403
    assert api(compliance).get(url).status_code == 403


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/api/v1/allocations"),
        ("patch", "/api/v1/tenant"),
        ("put", "/api/v1/budget"),
        ("post", "/api/v1/members"),
        ("post", "/api/v1/ops/tenants/acme/quota"),
        ("post", COST_BASIS),
    ],
)
def test_finance_changes_no_tenant_data(api, finance, acme, fleet, method, url):
    response = getattr(api(finance), method)(url, {}, format="json")
    assert response.status_code in (403, 404), response.content
