"""The portal's launch form refuses a shape without a price as the API does, with a readable message on the form."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tests.portal.test_pages import launch, signed_in
from tests.support import SYSTEM
from tests.support.billing import price
from tests.support.fleet_documents import small_fleet

pytestmark = pytest.mark.own_price_book  # only H100 containers are priced here


@pytest.fixture
def fleet(db: None) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    price("2.40", since=timezone.now() - timedelta(days=30))


def test_the_launch_form_says_which_sku_has_no_price(alice: Any, fleet: None) -> None:
    client = signed_in(alice)
    refused = launch(client, rung="serverless", name="inference", mig_profile="3g.40gb")
    assert refused.status_code == 422
    page = refused.content.decode()
    assert "serverless/H100-SXM-80GB/mig-3g.40gb/eu-west has no price yet" in page
    assert "ask the operator to price it" in page
    assert not Allocation.objects.exists()

    made = launch(client, name="train", gpus=1)  # a priced shape from the same form
    assert made.status_code == 302, made.content
    assert Allocation.objects.get().name == "train"
