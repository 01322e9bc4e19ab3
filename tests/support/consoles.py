"""Helpers for the consoles' tests: a generated fleet of 1,024 GPUs for the heatmap's measurements, and what the
finance console shows."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.test import Client
from django.utils import timezone

from billing.domain.metering import HOUR_MS, to_ms
from billing.models import BillingAccount, PushState, UsageRollup
from billing.selectors import month_of
from billing.services.accounts import cost_basis_add
from provisioning.domain.states import AllocationState
from provisioning.models import CapacitySample, GpuModel, Hall, Node
from provisioning.services.capacity import capacity_sample
from provisioning.services.transitions import allocation_transition
from tests.support import SYSTEM
from tests.support.billing import place, price, run, stop
from tests.support.fleet_documents import node
from tests.support.otp import pass_second_factor

NODES_PER_DOMAIN = 8


def signed_in(user: Any) -> Client:
    """A test client signed in as ``user``; a staff user also past the second factor, as after giving a code of
    their TOTP device (enrolled here when they have none: the admin and the consoles ask every staff user)."""
    client = Client()
    client.force_login(user)
    return pass_second_factor(client, user) if user.is_staff else client


def token(page: Any, prefix: str = "") -> str:
    """The one-time token of the form drawn on ``page`` (``frame.TOKEN_FIELD``, with the form's prefix)."""
    name = f"{prefix}-once" if prefix else "once"
    found = re.search(rf'name="{name}" value="([0-9a-f]+)"', page.content.decode())
    assert found, f"no one-time token {name} on the page"
    return found[1]


def fleet_of_1024_gpus() -> dict[str, Any]:
    """2 regions x 2 halls x 4 NVLink domains x 8 nodes x 8 GPUs."""
    regions = []
    for r, (code, jurisdiction) in enumerate([("eu-big", "EU"), ("us-big", "US")]):
        halls = []
        for h in range(2):
            hall = f"{code}-{h}"
            nodes = [
                node(f"{hall}-d{d}-n{n:02d}", f"{hall}/nvl-{d}") for d in range(4) for n in range(NODES_PER_DOMAIN)
            ]
            halls.append({"code": hall, "fenced_for": None, "nodes": nodes})
        regions.append({"code": code, "name": f"Region {r}", "jurisdiction": jurisdiction, "halls": halls})
    return {"regions": regions}


def finance_data(tenant: Any) -> None:
    """What the finance console shows, this month: a cost basis for every model and hall of the loaded fleet, half an
    hour of two GPUs billed, a capacity sample, a budget the tenant is over, and a push Stripe refused."""
    now = timezone.now()
    start = month_of(now)[0]
    parts = {"capex": Decimal("1.00"), "power": Decimal("0.20"), "space": Decimal("0.10"), "network": Decimal("0.05")}
    for model_id, hall_id in Node.objects.values_list("gpu_model", "hall").order_by().distinct():
        cost_basis_add(
            gpu_model=GpuModel.objects.get(pk=model_id),
            hall=Hall.objects.get(pk=hall_id),
            effective_from=start - timedelta(days=31),
            parts=parts,
            currency="usd",
            actor=SYSTEM,
        )
    item = price("2.40").sku
    ran = min(now - start, timedelta(minutes=30))
    began = start + timedelta(seconds=1)
    work = place(tenant, gpus=2)
    work.refresh_from_db()  # on a transactional database the simulated fleet has started provisioning it
    if work.state == AllocationState.PLACED:
        work = run(work, began)
    else:
        allocation_transition(allocation=work, to=AllocationState.RUNNING, actor=SYSTEM, at=began)
    stop(work, began + ran)
    capacity_sample(now=now)  # one sample standing for the month so far, as a sampler running all month would
    CapacitySample.objects.filter(at=now).update(seconds=max(int((now - start).total_seconds()), 1))
    BillingAccount.objects.filter(tenant=tenant).update(budget_monthly=Decimal("0.01"), budget_hard_stop=True)
    UsageRollup.objects.create(
        tenant=tenant,
        sku=item,
        price=item.prices.first(),
        window_ms=to_ms(now) // HOUR_MS * HOUR_MS - 3 * HOUR_MS,
        batch=1,
        quantity_milli=1_800_000,
        amount=Decimal("1.20"),
        currency="usd",
        meter_value=1800,
        push_state=PushState.FAILED,
        push_error="No such customer: 'cus_gone'",
    )
