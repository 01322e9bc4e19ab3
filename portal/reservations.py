"""Ordering a reservation in the portal (``/portal/reservations/new``, docs/capacity.md "Ordering one"): an owner or
admin keeps whole nodes of a GPU model in a hall for a term, priced off the on-demand price by the term's discount.
The order goes through ``lifecycle.services.capacity.reservation_order``, the service ``POST /api/v1/reservations``
calls, so the same limits refuse it in the same words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from billing.domain.commitments import TERM_DISCOUNTS, term_prices
from billing.selectors import billing_currency, price_index, reservation_base
from core.actor import Actor
from core.errors import ServiceError
from lifecycle.services.capacity import reservation_order
from portal.forms import error_onto
from portal.views import member
from provisioning.domain.placement.isolation import hall_allowed
from provisioning.models import GpuModel, Hall, Node
from provisioning.selectors import hall_info, tenant_policy
from tenancy.domain.roles import Action
from tenancy.models import Membership, Tenant


@dataclass(frozen=True)
class Pool:
    """A GPU model in a hall the tenant may reserve: its nodes' GPUs (a reservation is whole nodes of them) and the
    on-demand price of a whole GPU there (None: not priced, not sold)."""

    key: str  # "<model>@<hall>"
    gpu_model: str
    hall: str
    per_node: int
    on_demand: Decimal | None
    currency: str


def pools(tenant: Tenant) -> list[Pool]:
    """The pools the tenant's residency allows, by model and hall, with their on-demand price now."""
    prices = price_index(now=timezone.now())
    policy = tenant_policy(tenant)
    found = []
    rows = Node.objects.values("gpu_model__name", "hall").annotate(per_node=Max("gpu_count")).order_by()
    halls = {hall.pk: hall for hall in Hall.objects.select_related("region")}
    for row in sorted(rows, key=lambda r: (r["gpu_model__name"], halls[r["hall"]].code)):
        hall = halls[row["hall"]]
        if hall_allowed(policy, hall_info(hall)) is not None:
            continue
        whole = reservation_base(prices, row["gpu_model__name"], hall.region.code)
        found.append(
            Pool(
                key=f"{row['gpu_model__name']}@{hall.code}",
                gpu_model=row["gpu_model__name"],
                hall=hall.code,
                per_node=row["per_node"],
                on_demand=whole,
                currency=billing_currency(tenant).upper(),
            )
        )
    return found


TERMS = [(days, f"{days} days ({pct}% off on demand)") for days, pct in TERM_DISCOUNTS]


class ReservationOrderForm(forms.Form):
    pool = forms.ChoiceField(label="GPUs and hall")
    gpus = forms.IntegerField(min_value=1, max_value=100_000, label="GPUs", help_text="Whole nodes of the pool.")
    term_days = forms.TypedChoiceField(choices=TERMS, coerce=int, label="Term")
    starts_at = forms.DateTimeField(
        required=False,
        label="Starts (UTC)",
        help_text="YYYY-MM-DD HH:MM; empty: now.",
        input_formats=["%Y-%m-%d %H:%M"],
    )

    def __init__(self, *args: Any, choices: list[Pool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [  # type: ignore[attr-defined]
            (p.key, f"{p.gpu_model} in {p.hall} (nodes of {p.per_node})") for p in choices if p.on_demand
        ]


@member(Action.RESERVATION_ORDER)
def reserve(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The order form, and the order."""
    tenant = membership.tenant
    choices = pools(tenant)
    form = ReservationOrderForm(request.POST if request.method == "POST" else None, choices=choices)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        model, _, hall = data["pool"].partition("@")
        starts_at = data["starts_at"] or timezone.now()
        try:
            made = reservation_order(
                tenant=tenant,
                gpu_model=GpuModel.objects.get(name=model),
                hall=Hall.objects.select_related("region").get(code=hall),
                gpus=data["gpus"],
                starts_at=starts_at,
                ends_at=starts_at + timedelta(days=data["term_days"]),
                actor=Actor.for_user(request.user),
            )
        except ServiceError as error:
            error_onto(form, error, {"ends_at": "term_days", "hall": "pool", "gpu_model": "pool"})
        else:
            messages.success(
                request,
                f"Reservation #{made.pk}: {made.gpus} x {made.gpu_model.name} in {made.hall.code} from "
                f"{made.starts_at:%Y-%m-%d %H:%M} to {made.ends_at:%Y-%m-%d %H:%M} UTC, at "
                f"{made.price_per_gpu_hour} {made.currency.upper()} per GPU-hour, billed each month in advance.",
            )
            return redirect("portal:home")
    table = [
        {"pool": p, "prices": [t.price_per_gpu_hour for t in term_prices(p.on_demand)]} for p in choices if p.on_demand
    ]
    context = {"form": form, "table": table, "terms": TERM_DISCOUNTS}
    return render(request, "portal/reserve.html", context, status=422 if form.errors else 200)
