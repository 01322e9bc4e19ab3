"""Storage in finance's figures: operators keep its cost per GB-month in the cost book
(``/api/v1/ops/storage-cost-basis``), and ``/api/v1/finance/margin`` shows storage's revenue, cost and margin per
region, kind and month beside compute's, in the month's totals too."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from billing.models import StorageCostBasis
from billing.services.ledger import windows_close
from core.models import AuditEvent
from lifecycle.services.volumes import volume_create
from provisioning.domain.volumes import VolumeState
from provisioning.models import Region
from provisioning.services.volumes import volume_transition
from tests.support import SYSTEM, assert_problem
from tests.support.billing import BASE, at, load_fleet, storage_price

COST = "/api/v1/ops/storage-cost-basis"
MARGIN = "/api/v1/finance/margin"
BASIS = {
    "region": "eu-west",
    "storage_kind": "filesystem",
    "effective_from": (BASE - timedelta(days=1)).isoformat(),
    "cost_per_gb_month": "29.20",  # 0.04 a GB-hour
}


@pytest.fixture
def fleet(db: None) -> None:
    load_fleet()


def test_operators_add_storage_to_the_cost_book_and_finance_reads_it(
    api: Any, operator: Any, finance: Any, fleet: None
) -> None:
    response = api(operator).post(COST, BASIS, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["region"], body["storage_kind"], body["cost_per_gb_month"], body["currency"]) == (
        "eu-west",
        "filesystem",
        "29.200000",
        "usd",
    )
    event = AuditEvent.objects.get(action="billing.storage_cost_basis_added")
    assert event.data["cost_per_gb_month"] == "29.200000"
    assert event.actor_id == str(operator.pk)
    listed = api(finance).get(COST).json()["results"]
    assert [row["id"] for row in listed] == [body["id"]]
    assert_problem(api(finance).post(COST, BASIS, format="json"), 403, "permission_denied")  # finance reads only
    assert_problem(api(operator).post(COST, BASIS, format="json"), 409, "cost_basis_exists")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"region": "mars-1"}, "region"),
        ({"storage_kind": "tape"}, "storage_kind"),
        ({"cost_per_gb_month": "-1"}, "cost_per_gb_month"),
        ({"effective_from": "soon"}, "effective_from"),
        ({"currency": "USD"}, "currency"),
    ],
)
def test_a_bad_storage_cost_is_refused_naming_the_field(
    api: Any, operator: Any, fleet: None, change: dict[str, str], field: str
) -> None:
    problem = assert_problem(api(operator).post(COST, {**BASIS, **change}, format="json"), 422, "validation_error")
    assert field in (problem.get("errors") or {}) or problem.get("field") == field
    assert not StorageCostBasis.objects.exists()


def test_tenants_never_see_the_storage_cost_book(api: Any, alice: Any, fleet: None) -> None:
    assert_problem(api(alice).get(COST), 403, "permission_denied")
    assert_problem(api(alice).post(COST, BASIS, format="json"), 403, "permission_denied")


def test_finance_sees_storage_revenue_cost_and_margin_per_region_and_kind(
    api: Any, operator: Any, finance: Any, acme: Any, fleet: None
) -> None:
    storage_price("73.00")  # 0.10 a GB-hour
    assert api(operator).post(COST, BASIS, format="json").status_code == 201
    region = Region.objects.get(code="eu-west")
    volume = volume_create(
        tenant=acme, name="datasets", region=region, kind="filesystem", size_gb=100, actor=SYSTEM, now=at(0)
    )
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=at(0))
    volume_transition(volume=volume, to=VolumeState.DELETING, actor=SYSTEM, at=at(90))
    windows_close(now=at(180))

    body = api(finance).get(MARGIN, {"from": "2026-11"}).json()
    assert body["storage"] == [
        {
            "month": "2026-11",
            "region": "eu-west",
            "storage_kind": "filesystem",
            "currency": "usd",
            "revenue": "15.0000",  # 150 GB-hours at 0.10
            "gb_hours": "150.000",
            "cost": "6.0000",  # at 0.04
            "gross_margin": "9.0000",
            "margin_pct": "60.0",
            "uncosted_gb_hours": "0.000",
        }
    ]
    assert body["rungs"] == []
    [total] = body["totals"]
    assert (total["storage_revenue"], total["storage_cost"], total["gross_margin"]) == ("15.0000", "6.0000", "9.0000")
    assert_problem(api(operator).get(MARGIN), 403, "permission_denied")  # revenue is finance's
