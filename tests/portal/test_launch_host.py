"""The portal's launch form takes vCPUs and memory per member as the API does: placed and kept on the allocation,
refused on the form beyond four times the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from billing.models import Unit
from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tests.portal.test_pages import launch, signed_in
from tests.support import SYSTEM
from tests.support.billing import host_price
from tests.support.fleet_documents import small_fleet


@pytest.fixture
def fleet(db: None) -> None:
    fleet_load(document=small_fleet(), actor=SYSTEM)
    host_price("0.02", unit=Unit.VCPU)


def test_the_launch_form_asks_vcpus_and_memory_per_member(alice: Any, fleet: None) -> None:
    client = signed_in(alice)
    refused = launch(client, name="big", gpus=1, cpu=33)
    assert refused.status_code == 422
    assert "A member here takes 1 to 32 vCPUs (4 times the 8 sold with it), not 33." in refused.content.decode()
    made = launch(client, name="train", gpus=1, cpu=12, memory_gib=32)
    assert made.status_code == 302, made.content
    spec = Allocation.objects.get().spec
    assert (spec["cpu_milli"], spec["memory_mib"]) == (12_000, 32 * 1024)
    detail = client.get(made["Location"])
    shown = b"12 vCPUs and 32 GiB of memory beside its GPUs; 4 vCPUs of them beyond the bundle, billed by the hour."
    assert shown in detail.content
