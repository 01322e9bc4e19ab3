"""Reservations through the API (docs/capacity.md, "Reservations"): an operator keeps whole nodes for a tenant over
a term; the tenant's reserved work always fits inside them, other tenants' on-demand work never takes them, spot
work borrows them until the owner needs them back; the term is billed, used or not, and the use is shown."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.models import SkuPrice, UsageInterval
from billing.selectors import month_of
from core.models import AuditEvent
from provisioning.models import Allocation, Reservation
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import small_fleet

URL = "/api/v1/reservations"
H100 = "H100-SXM-80GB"


@pytest.fixture
def fleet(db, settings):
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def month_left(now):
    """The share of ``now``'s calendar month still to come."""
    start, end = month_of(now)
    return Decimal((end - now).total_seconds()) / Decimal((end - start).total_seconds())


def reserve(api, operator, **body):
    body = {
        "tenant": "acme",
        "gpu_model": H100,
        "hall": "eu-west-1a",
        "gpus": 8,
        "ends_at": (timezone.now() + timedelta(days=30)).isoformat(),
        "price_per_gpu_hour": "1.50",
        **body,
    }
    return api(operator).post(URL, body, format="json")


def ask(client, **body):
    body = {"name": "work", "rung": "container", "gpu_model": H100, "regions": ["eu-west"], **body}
    return client.post("/api/v1/allocations", body, format="json")


def test_an_operator_reserves_whole_nodes_and_the_tenant_sees_them(api, operator, alice, charlie, fleet):
    made = reserve(api, operator)
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["tenant"], body["gpu_model"], body["hall"], body["gpus"]) == ("acme", H100, "eu-west-1a", 8)
    assert (body["price_per_gpu_hour"], body["currency"]) == ("1.500000", "usd")
    assert body["use"]["in_use_gpus"] == "0.000"
    assert [r["id"] for r in api(alice).get(URL).json()["results"]] == [body["id"]]
    assert api(charlie).get(URL).json()["results"] == []  # another tenant's: not even listed
    assert api(charlie).get(f"{URL}/{body['id']}").status_code == 404
    assert AuditEvent.objects.filter(action="reservation.created", target_id=str(body["id"])).exists()


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({"gpus": 4}, 422, "validation_error", "gpus"),  # not whole nodes of 8
        ({"gpus": 24}, 409, "no_capacity", "gpus"),  # the hall has 20 H100s
        ({"starts_at": "2020-01-01T00:00:00Z"}, 422, "validation_error", "starts_at"),
        ({"ends_at": "2020-01-01T00:00:00Z"}, 422, "validation_error", "ends_at"),
        ({"price_per_gpu_hour": "0"}, 422, "validation_error", "price_per_gpu_hour"),
        ({"hall": "eu-west-1b", "gpu_model": "H200-141GB"}, 422, "residency", "hall"),  # fenced for sovereign work
    ],
)
def test_a_reservation_that_cannot_be_kept_is_refused(api, operator, acme, fleet, body, status, code, field):
    refused = assert_problem(reserve(api, operator, **body), status, code)
    assert field in refused["errors"]


def test_a_tenant_does_not_set_its_own_price(api, alice, fleet):
    assert "price_per_gpu_hour" in assert_problem(reserve(api, alice), 422, "validation_error")["errors"]


def test_reserved_work_fits_in_its_room_others_never_take_it_and_spot_borrows_it(
    api, operator, alice, charlie, fleet, django_capture_on_commit_callbacks
):
    reservation = reserve(api, operator).json()["id"]
    # Another tenant's on-demand work takes the rest of the hall, never the kept node.
    assert ask(api(charlie), gpus=8).status_code == 201
    assert ask(api(charlie), gpus=4).status_code == 201
    assert_problem(ask(api(charlie), gpus=8), 409, "no_capacity")
    # Spot work borrows the kept node...
    with django_capture_on_commit_callbacks(execute=True):
        spot = ask(api(charlie), gpus=8, capacity_class="spot")
    assert spot.status_code == 201, spot.content
    # ...and gives it back when the owner's reserved work needs it.
    with django_capture_on_commit_callbacks(execute=True):
        mine = ask(api(alice), gpus=8, capacity_class="reserved", reservation=reservation)
    assert mine.status_code == 201, mine.content
    assert (mine.json()["capacity_class"], mine.json()["reservation"]) == ("reserved", reservation)
    assert Allocation.objects.get(pk=spot.json()["id"]).state == "stopped"
    # Beyond its room, reserved work is refused (and may be asked for on demand).
    assert_problem(ask(api(alice), gpus=1, capacity_class="reserved", reservation=reservation), 409, "reservation")
    use = api(alice).get(f"{URL}/{reservation}").json()["use"]
    assert use["in_use_gpus"] == "8.000"


def test_the_term_is_billed_used_or_not_and_reserved_use_is_metered_at_nothing(
    api, operator, alice, fleet, django_capture_on_commit_callbacks
):
    now = timezone.now()
    reservation = reserve(api, operator, ends_at=(now + timedelta(days=400)).isoformat()).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        ask(api(alice), gpus=8, capacity_class="reserved", reservation=reservation)
    usage = UsageInterval.objects.get()
    assert usage.sku.code == "container/H100-SXM-80GB/gpu/eu-west/reserved"
    assert usage.price is not None
    assert usage.price.unit_price_per_hour == 0
    lines = {line["sku"]: line for line in api(alice).get("/api/v1/invoices/upcoming").json()["lines"]}
    term = lines[f"reservation/{reservation}"]
    assert term["unit"] == "GPU-hours committed"
    billed = Decimal(term["quantity"])
    assert abs(billed - 8 * 730 * month_left(now)) < Decimal("0.01")  # the rest of the month, 730 hours a month,
    assert Decimal(term["amount"]) == (billed * Decimal("1.5")).quantize(Decimal("0.01"))  # in advance


def test_an_operator_ends_a_reservation_and_its_room_is_free_again(api, operator, acme, charlie, fleet):
    reservation = reserve(api, operator).json()["id"]
    assert ask(api(charlie), gpus=8).status_code == 201
    assert ask(api(charlie), gpus=4).status_code == 201
    assert_problem(ask(api(charlie), gpus=8), 409, "no_capacity")
    ended = api(operator).post(f"{URL}/{reservation}/end")
    assert ended.status_code == 200
    assert ended.json()["cancelled_at"] is not None
    assert ask(api(charlie), gpus=8).status_code == 201
    assert AuditEvent.objects.filter(action="reservation.ended").exists()


def test_finance_sees_what_reservations_bill_their_use_and_the_revenue_they_lock_in(
    api, operator, finance, alice, fleet, django_capture_on_commit_callbacks
):
    now = timezone.now()
    ends = now + timedelta(days=60)
    reservation = reserve(api, operator, ends_at=ends.isoformat(), price_per_gpu_hour="2.00").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        ask(api(alice), gpus=4, capacity_class="reserved", reservation=reservation)
    report = api(finance).get("/api/v1/finance/reservations").json()
    (row,) = report["reservations"]
    assert (row["id"], row["tenant"], row["gpus"]) == (reservation, "acme", 8)
    _, month_end = month_of(now)
    assert abs(Decimal(row["committed_gpu_hours"]) - 8 * Decimal((month_end - now).total_seconds()) / 3600) < 1
    assert abs(Decimal(row["billed"]) - 8 * 730 * 2 * month_left(now)) < Decimal("0.01")
    # The rest of the term: this month's rest, then each month it meets its share of 730 hours.
    locked = Decimal(row["locked_in"])
    assert Decimal(row["billed"]) <= locked <= Decimal(row["billed"]) + 8 * 2 * 730 * 2
    assert Decimal(row["used_gpu_hours"]) >= 0
    assert report["utilisation"] is not None
    assert report["locked_in"] == row["locked_in"]
    assert api(alice).get("/api/v1/finance/reservations").status_code == 403


def test_no_reservation_is_made_for_a_tenant_that_is_not_active(api, operator, acme, fleet):
    from tenancy.models import TenantState

    type(acme).objects.filter(pk=acme.pk).update(state=TenantState.SUSPENDED)
    assert_problem(reserve(api, operator), 409, "tenant_not_active")


def test_reserved_work_outliving_its_reservation_runs_on_on_demand(
    api, operator, alice, fleet, django_capture_on_commit_callbacks
):
    from lifecycle.services.capacity import reservations_expire

    reservation = reserve(api, operator).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        mine = ask(api(alice), gpus=4, capacity_class="reserved", reservation=reservation).json()
    assert Allocation.objects.get(pk=mine["id"]).state == "running"
    assert reservations_expire(now=timezone.now(), actor=SYSTEM) == 0  # its term is not over
    api(operator).post(f"{URL}/{reservation}/end")
    moved = api(alice).get(f"/api/v1/allocations/{mine['id']}").json()
    assert (moved["state"], moved["capacity_class"], moved["reservation"]) == ("running", "on_demand", None)
    skus = list(
        UsageInterval.objects.filter(allocation_id=mine["id"]).order_by("start_ms").values_list("sku__code", "end_ms")
    )
    assert [code for code, _ in skus] == [
        "container/H100-SXM-80GB/gpu/eu-west/reserved",
        "container/H100-SXM-80GB/gpu/eu-west",
    ]
    assert skus[0][1] is not None  # the reserved piece closed at the end of the term
    assert skus[1][1] is None  # and on demand runs on
    assert AuditEvent.objects.filter(action="allocation.reservation_ended", target_id=str(mine["id"])).exists()
    assert reservations_expire(now=timezone.now(), actor=SYSTEM) == 0  # nothing left to move


# --- a tenant's own order ---------------------------------------------------------------------------------------


def order(client, **body):
    body = {
        "gpu_model": H100,
        "hall": "eu-west-1a",
        "gpus": 8,
        "ends_at": (timezone.now() + timedelta(days=30, minutes=1)).isoformat(),
        **body,
    }
    return client.post(URL, body, format="json")


def test_an_owner_orders_a_reservation_priced_off_on_demand_by_its_term(api, alice, fleet):
    ordered = order(api(alice))
    assert ordered.status_code == 201, ordered.content
    body = ordered.json()
    assert (body["tenant"], body["gpus"], body["hall"]) == ("acme", 8, "eu-west-1a")
    on_demand = SkuPrice.objects.filter(sku__code="container/H100-SXM-80GB/gpu/eu-west").latest("effective_from")
    # 30 days: 20% off the on-demand price of a whole GPU there.
    assert Decimal(body["price_per_gpu_hour"]) == (on_demand.unit_price_per_hour * Decimal("0.8")).quantize(
        Decimal("0.000001")
    )
    year = order(api(alice), ends_at=(timezone.now() + timedelta(days=365, minutes=1)).isoformat())
    assert year.status_code == 201, year.content
    assert Decimal(year.json()["price_per_gpu_hour"]) == on_demand.unit_price_per_hour * Decimal("0.6")  # 40% off
    assert AuditEvent.objects.filter(action="reservation.created", tenant__slug="acme").count() == 2


@pytest.mark.parametrize(
    ("days", "body", "status", "code", "field"),
    [
        (3, {}, 422, "validation_error", "ends_at"),  # shorter than any term sold
        (400, {}, 422, "validation_error", "ends_at"),  # longer: agreed with an operator
        (30, {"price_per_gpu_hour": "0.01"}, 422, "validation_error", "price_per_gpu_hour"),
        (30, {"tenant": "globex"}, 422, "validation_error", "tenant"),
        (30, {"gpus": 16}, 409, "reservation_limit", "gpus"),
    ],
)
def test_an_order_outside_the_limits_is_refused(api, alice, globex, fleet, settings, days, body, status, code, field):
    settings.LADDER_RESERVATION_ORDER_MAX_GPUS = 8
    ends_at = (timezone.now() + timedelta(days=days, minutes=1)).isoformat()
    assert field in assert_problem(order(api(alice), ends_at=ends_at, **body), status, code)["errors"]
    assert not Reservation.objects.exists()


def test_the_limit_counts_every_reservation_the_tenant_holds_over_the_term(api, operator, alice, fleet, settings):
    settings.LADDER_RESERVATION_ORDER_MAX_GPUS = 16
    assert reserve(api, operator).status_code == 201  # 8 GPUs made by an operator, for 30 days
    assert order(api(alice)).status_code == 201  # 8 more: 16
    refused = assert_problem(order(api(alice)), 409, "reservation_limit")
    assert "gpus" in refused["errors"]
    assert (refused["held_gpus"], refused["limit_gpus"]) == (16, 16)


def test_members_read_reservations_and_only_owners_and_admins_order_them(api, bob, fleet):
    assert api(bob).get(URL).status_code == 200
    assert order(api(bob)).status_code == 403
    assert not Reservation.objects.exists()
