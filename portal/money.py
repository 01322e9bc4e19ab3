"""The billing page (``/portal/billing``): the monthly budget and its hard stop (owners and admins set or lift it),
the budget alerts of this month and every notice the product sent, and past invoices: Stripe's, with its hosted
page, where Stripe is configured; the local monthly previews otherwise (as ``/api/v1/invoices`` answers)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from billing.domain.pricing import from_minor
from billing.models import BudgetAlert, Invoice, Notification
from billing.selectors import invoice_previews, month_of, stripe_enabled
from billing.services.accounts import BUDGET_THRESHOLDS, billing_account
from core.actor import Actor
from core.errors import ServiceError
from lifecycle.services.customers import budget_update
from portal.forms import BudgetForm, error_onto
from portal.views import cost_figures, member
from tenancy.domain.roles import Action, role_allows
from tenancy.models import Membership


def _invoices(membership: Membership) -> list[dict[str, Any]]:
    tenant = membership.tenant
    if stripe_enabled():
        return [
            {
                "period_start": i.period_start,
                "period_end": i.period_end,
                "status": i.status,
                "total": from_minor(i.total, i.currency),
                "currency": i.currency.upper(),
                "url": i.hosted_invoice_url,
            }
            for i in Invoice.objects.filter(tenant=tenant)[:36]
        ]
    return [
        {
            "period_start": p.period_start,
            "period_end": p.period_end,
            "status": "preview",
            "total": p.total,
            "currency": p.currency.upper(),
            "url": None,
        }
        for p in invoice_previews(tenant=tenant, now=timezone.now())
    ]


@member(Action.BILLING_VIEW)
def billing(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant = membership.tenant
    manage = role_allows(membership.role, Action.BUDGET_MANAGE)
    account = billing_account(tenant)
    form = BudgetForm(
        request.POST or None, initial={"monthly": account.budget_monthly, "hard_stop": account.budget_hard_stop}
    )
    if request.method == "POST":
        if not manage:
            raise PermissionDenied("Only owners and admins set the budget.")
        if form.is_valid():
            monthly = form.cleaned_data["monthly"]
            try:
                budget_update(
                    tenant=tenant,
                    monthly=monthly,
                    hard_stop=form.cleaned_data["hard_stop"],
                    actor=Actor.for_user(request.user),
                    now=timezone.now(),
                )
            except ServiceError as error:
                error_onto(form, error)
            else:
                messages.success(request, "The budget is lifted." if monthly is None else "The budget is set.")
                return redirect("portal:billing")
    month = month_of(timezone.now())[0].date()
    context = {
        "cost": cost_figures(membership),
        "form": form,
        "manage": manage,
        "alerts": BudgetAlert.objects.filter(tenant=tenant, month=month).order_by("threshold"),
        "notifications": Notification.objects.filter(tenant=tenant)[:50],
        "invoices": _invoices(membership),
        "stripe": stripe_enabled(),
        "thresholds": BUDGET_THRESHOLDS,
    }
    return render(request, "portal/billing.html", context, status=422 if form.errors else 200)
