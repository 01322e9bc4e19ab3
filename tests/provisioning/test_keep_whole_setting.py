"""``LADDER_KEEP_WHOLE``: the operator's admission rule that sells a pool's last free GPUs whole (docs/placement.md,
"Keeping GPUs whole"), through the product's own placement path."""

from __future__ import annotations

import pytest

from provisioning.fleet_cache import FLEET
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, PlacementRefused, allocation_request
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.fleet_documents import node, one_hall

pytestmark = pytest.mark.django_db

H100 = "H100-SXM-80GB"
WHOLE = AllocationSpec(rung="container", gpu_models=(H100,), gpus=1)
SLICE = AllocationSpec(rung="container", gpu_models=(H100,), mig_profile="1g.10gb")


def fill(tenant: Tenant) -> None:
    """Six whole GPUs of an 8-GPU node taken: the workload asks only whole GPUs, two are free."""
    fleet_load(document=one_hall(node("n1", "eu-west-1a/nvl-0")), actor=SYSTEM)
    for i in range(6):
        allocation_request(tenant=tenant, name=f"whole-{i}", spec=WHOLE, actor=SYSTEM)


def test_with_it_the_last_free_gpus_are_sold_whole(acme: Tenant, settings) -> None:
    settings.LADDER_KEEP_WHOLE = 0.5  # keep half the pool's GPUs x the share of whole-GPU requests (all): 4
    FLEET.invalidate()
    fill(acme)
    with pytest.raises(PlacementRefused) as refused:
        allocation_request(tenant=acme, name="slice", spec=SLICE, actor=SYSTEM)
    assert refused.value.code == "no_capacity"
    allocation_request(tenant=acme, name="whole-6", spec=WHOLE, actor=SYSTEM)  # whole-GPU work is never held back


def test_without_it_a_slice_cuts_a_free_gpu(acme: Tenant) -> None:
    fill(acme)
    assert allocation_request(tenant=acme, name="slice", spec=SLICE, actor=SYSTEM).state == "placed"
