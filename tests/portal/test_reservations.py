"""A tenant's reservations in the portal (docs/capacity.md): the home page shows each one in force with its use, and
the launch form offers reserved capacity on it only to a tenant that holds one."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from lifecycle.services.capacity import reservation_create
from provisioning.models import Allocation, GpuModel, Hall, Reservation
from provisioning.services.fleet import fleet_load
from tests.portal.test_pages import launch, signed_in
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet


@pytest.fixture
def fleet(db: None) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)


def test_the_launch_form_offers_reserved_capacity_only_with_a_reservation(alice: Any, acme: Any, fleet: None) -> None:
    client = signed_in(alice)
    page = client.get("/portal/launch", {"rung": "container"}).content.decode()
    assert '<option value="reserved"' not in page
    assert '<div class="class-price" data-class="reserved">' in page  # a reservation's price by term, to order one
    assert "365 days" in page
    assert "Your reservations" not in client.get("/portal/").content.decode()

    reservation = reservation_create(
        tenant=acme,
        gpu_model=GpuModel.objects.get(name="H100-SXM-80GB"),
        hall=Hall.objects.get(code="eu-west-1a"),
        gpus=8,
        starts_at=timezone.now(),
        ends_at=timezone.now() + timedelta(days=30),
        price_per_gpu_hour=Decimal("1.80"),
        actor=SYSTEM,
    )
    page = client.get("/portal/launch", {"rung": "container"}).content.decode()
    assert '<option value="reserved">Reserved</option>' in page
    assert f'<option value="{reservation.pk}">#{reservation.pk}: 8 x H100-SXM-80GB in eu-west-1a</option>' in page

    made = launch(client, name="on-mine", gpus=2, capacity_class="reserved", reservation=str(reservation.pk))
    assert made.status_code == 302, made.content
    placed = Allocation.objects.get(name="on-mine")
    assert (placed.capacity_class, placed.reservation_id) == ("reserved", reservation.pk)
    assert placed.hall.code == "eu-west-1a"

    home = client.get("/portal/").content.decode()
    assert "Your reservations" in home
    assert f'data-reservation="{reservation.pk}"' in home
    assert "2 GPUs" in home  # in use now


def test_reserved_capacity_without_a_reservation_is_refused_on_the_form(alice: Any, fleet: None) -> None:
    refused = launch(signed_in(alice), name="nope", gpus=1, capacity_class="reserved")
    assert refused.status_code == 422
    assert not Allocation.objects.exists()


def test_an_owner_orders_a_reservation_in_the_portal_and_sees_it(alice: Any, bob: Any, fleet: None) -> None:
    client = signed_in(alice)
    assert "/portal/reservations/new" in client.get("/portal/").content.decode()
    page = client.get("/portal/reservations/new").content.decode()
    assert 'data-pool="H100-SXM-80GB@eu-west-1a"' in page
    assert "365 days (40% off on demand)" in page
    # A term or count the rules refuse is said on the form, in the service's words.
    refused = client.post("/portal/reservations/new", {"pool": "H100-SXM-80GB@eu-west-1a", "gpus": 4, "term_days": 30})
    assert refused.status_code == 422
    assert "whole nodes: a multiple of 8 GPUs" in refused.content.decode()
    made = client.post(
        "/portal/reservations/new", {"pool": "H100-SXM-80GB@eu-west-1a", "gpus": 8, "term_days": 30}, follow=True
    )
    assert made.status_code == 200
    text = made.content.decode()
    assert "billed each month in advance" in text
    assert "Your reservations" in text
    (reservation,) = Reservation.objects.all()
    assert (reservation.gpus, reservation.ends_at - reservation.starts_at) == (8, timedelta(days=30))
    # A member reads reservations but does not order them.
    member = signed_in(bob)
    assert "/portal/reservations/new" not in member.get("/portal/").content.decode()
    assert member.get("/portal/reservations/new").status_code == 403
