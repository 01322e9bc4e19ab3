"""Storage prices through the API: operators keep them per GB-month (``/api/v1/ops/storage-prices``), the public
price list shows them beside compute's, and nothing is stored without one: a volume or snapshot whose storage kind
has no price in effect in its region is refused 409 ``not_priced``, naming the SKU."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from time_machine import TimeMachineFixture

from billing.models import SkuPrice
from billing.services.storage import storage_price_set
from core.models import AuditEvent
from provisioning.models import Region, Volume, VolumeSnapshot
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import small_fleet

pytestmark = pytest.mark.own_price_book  # each test prices exactly the storage it means to sell

OPS = "/api/v1/ops/storage-prices"
VOLUMES = "/api/v1/volumes"
D = Decimal


@pytest.fixture
def fleet(db: None) -> None:
    """eu-west and us-east, with no storage priced."""
    fleet_load(document=small_fleet(), actor=SYSTEM)


def schedule(kind: str, per_month: str, *, region: str = "eu-west", start: Any = None) -> SkuPrice:
    return storage_price_set(
        region=Region.objects.get(code=region),
        storage_kind=kind,
        price_per_gb_month=D(per_month),
        effective_from=start or timezone.now(),
        actor=SYSTEM,
    )


def create(client: Any, capture: Any, **body: Any) -> Any:
    body = {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": 100, **body}
    with capture(execute=True):
        return client.post(VOLUMES, body, format="json")


# --- the operators' price book ----------------------------------------------------------------------------------


def test_operators_price_storage_per_gb_month_and_see_what_is_unpriced(api: Any, operator: Any, fleet: None) -> None:
    client = api(operator)
    listed = client.get(OPS).json()
    assert {(r["region"], r["storage_kind"]) for r in listed} == {
        (region, kind) for region in ("eu-west", "us-east") for kind in ("filesystem", "block", "snapshot")
    }
    assert all(r["per_gb_month"] is None for r in listed)  # nothing priced: every volume would be refused

    made = client.post(OPS, {"region": "eu-west", "storage_kind": "filesystem", "per_gb_month": "0.07"}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["sku"] == "storage/filesystem/eu-west"
    assert (body["per_gb_month"], body["unit_price_per_hour"], body["currency"]) == ("0.070000", "0.0000958904", "usd")
    assert AuditEvent.objects.filter(action="price.scheduled", actor_id=str(operator.pk)).exists()

    later = timezone.now() + timedelta(days=10)
    scheduled = client.post(
        OPS,
        {
            "region": "eu-west",
            "storage_kind": "filesystem",
            "per_gb_month": "0.06",
            "effective_from": later.isoformat(),
        },
        format="json",
    )
    assert scheduled.status_code == 201, scheduled.content
    rows = {(r["region"], r["storage_kind"]): r for r in client.get(OPS).json()}
    row = rows[("eu-west", "filesystem")]
    assert row["per_gb_month"] == "0.070000"
    assert row["next_price"]["per_gb_month"] == "0.060000"
    assert rows[("eu-west", "block")]["per_gb_month"] is None


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"region": "mars-1", "storage_kind": "block", "per_gb_month": "0.1"}, 422, "validation_error", "region"),
        ({"region": "eu-west", "storage_kind": "tape", "per_gb_month": "0.1"}, 422, "validation_error", "storage_kind"),
        ({"region": "eu-west", "storage_kind": "block", "per_gb_month": "-1"}, 422, "validation_error", "per_gb_month"),
        ({"region": "eu-west", "storage_kind": "block", "per_gb_month": "0.1", "colour": "red"}, 422, None, "colour"),
        (
            {
                "region": "eu-west",
                "storage_kind": "block",
                "per_gb_month": "0.1",
                "effective_from": "2000-01-01T00:00Z",
            },
            422,
            "price_in_past",
            "effective_from",
        ),
    ],
)
def test_a_bad_storage_price_is_refused_naming_the_field(
    api: Any, operator: Any, fleet: None, body: dict[str, Any], status: int, code: str | None, field: str
) -> None:
    response = api(operator).post(OPS, body, format="json")
    assert response.status_code == status, response.content
    problem = response.json()
    if code is not None:
        assert problem["code"] == code
    assert field in (problem.get("errors") or {}) or problem.get("field") == field, problem
    assert not SkuPrice.objects.exists()


def test_finance_reads_the_storage_price_book_tenants_and_finance_never_set_it(
    api: Any, alice: Any, finance: Any, fleet: None
) -> None:
    body = {"region": "eu-west", "storage_kind": "block", "per_gb_month": "0.10"}
    assert api(finance).get(OPS).status_code == 200
    assert_problem(api(finance).post(OPS, body, format="json"), 403, "permission_denied")
    assert_problem(api(alice).get(OPS), 403, "permission_denied")
    assert_problem(api(alice).post(OPS, body, format="json"), 403, "permission_denied")
    assert not SkuPrice.objects.exists()


def test_the_public_price_list_shows_storage_per_gb_hour_and_per_gb_month(client: Any, fleet: None) -> None:
    schedule("filesystem", "0.07")
    schedule("filesystem", "0.065", start=timezone.now() + timedelta(days=3))
    rows = {row["sku"]: row for row in client.get("/api/v1/prices").json()}
    row = rows["storage/filesystem/eu-west"]
    assert (row["unit"], row["storage_kind"], row["rung"], row["gpu_model"]) == ("gb", "filesystem", "", None)
    assert (row["unit_price_per_hour"], row["unit_price_per_month"]) == ("0.0000958904", "0.070000")
    assert row["next_price"]["unit_price_per_month"] == "0.065000"


# --- nothing is stored without a price -----------------------------------------------------------------------------


def test_a_volume_where_storage_has_no_price_is_refused_naming_its_sku(
    api: Any, alice: Any, fleet: None, django_capture_on_commit_callbacks: Any
) -> None:
    client, capture = api(alice), django_capture_on_commit_callbacks
    body = assert_problem(create(client, capture), 409, "not_priced")
    assert body["sku"] == "storage/filesystem/eu-west"
    assert "storage/filesystem/eu-west" in body["detail"]
    assert not Volume.objects.exists()

    schedule("filesystem", "0.07")  # filesystems sell in eu-west; block volumes and us-east still do not
    made = create(client, capture)
    assert made.status_code == 201, made.content
    assert assert_problem(create(client, capture, name="disk", kind="block"), 409, "not_priced")["sku"] == (
        "storage/block/eu-west"
    )
    assert assert_problem(create(client, capture, name="us", region="us-east"), 409, "not_priced")["sku"] == (
        "storage/filesystem/us-east"
    )
    # A snapshot is storage of its own kind: refused until snapshots are priced in the region.
    volume = made.json()["id"]
    with capture(execute=True):
        refused = client.post(f"{VOLUMES}/{volume}/snapshots", {"name": "s1"}, format="json")
    assert assert_problem(refused, 409, "not_priced")["sku"] == "storage/snapshot/eu-west"
    assert not VolumeSnapshot.objects.exists()
    schedule("snapshot", "0.05")
    with capture(execute=True):
        assert client.post(f"{VOLUMES}/{volume}/snapshots", {"name": "s1"}, format="json").status_code == 201
    # A kind that is not one is still named as bad input, not as unpriced.
    assert_problem(create(client, capture, name="tape", kind="tape"), 422, "validation_error")


def test_a_storage_price_that_starts_later_does_not_count_yet(
    api: Any, alice: Any, fleet: None, django_capture_on_commit_callbacks: Any, time_machine: TimeMachineFixture
) -> None:
    starts = timezone.now() + timedelta(hours=1)
    schedule("block", "0.10", start=starts)
    client = api(alice)
    assert_problem(create(client, django_capture_on_commit_callbacks, kind="block"), 409, "not_priced")
    time_machine.move_to(starts + timedelta(seconds=1))
    made = create(client, django_capture_on_commit_callbacks, kind="block")
    assert made.status_code == 201, made.content
