"""The tenant's payment method: added on Stripe's own page (Checkout in setup mode), never typed into Ladder.

Without Stripe (ledger-only mode) the page says so plainly: there is nothing to add.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from billing.selectors import stripe_enabled
from billing.services.accounts import billing_account
from billing.services.stripe_sync import payment_method_setup
from core.errors import ServiceError
from portal.views import member
from tenancy.domain.roles import Action
from tenancy.models import Membership


@member(Action.BUDGET_MANAGE)
def payment(request: HttpRequest, membership: Membership) -> HttpResponse:
    if request.method == "POST":
        back = request.build_absolute_uri(reverse("portal:payment"))
        try:
            url = payment_method_setup(tenant=membership.tenant, success_url=f"{back}?added=1", cancel_url=back)
        except ServiceError as error:
            messages.error(request, error.detail)
            return redirect("portal:payment")
        return redirect(url)
    if request.GET.get("added"):
        messages.success(request, "Thank you: Stripe confirms the payment method in a moment.")
    context = {"stripe": stripe_enabled(), "account": billing_account(membership.tenant)}
    return render(request, "portal/payment.html", context)
