"""``manage.py stripe_sync_catalog``: create the Billing Meter, Product and metered Prices of every SKU that
Stripe lacks. Idempotent: a second run creates nothing."""

from __future__ import annotations

from typing import Any

import stripe
from django.core.management.base import BaseCommand, CommandError

from billing.services.stripe_sync import stripe_enabled
from billing.services.stripe_sync import stripe_sync_catalog as sync


class Command(BaseCommand):
    help = "Create Stripe meters, products and prices for the price book (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        if not stripe_enabled():
            raise CommandError("Stripe is not configured: set STRIPE_API_KEY (the product is ledger-only without it).")
        try:
            self.stdout.write(str(sync()))
        except stripe.StripeError as error:
            raise CommandError(f"Stripe refused: {error.user_message or error}") from None
