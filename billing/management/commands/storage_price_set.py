"""``manage.py storage_price_set --region CODE --kind filesystem|block|snapshot --per-gb-month PRICE [--from ISO]``:
schedule a storage price, quoted per GB-month as operators read it and kept per GB-hour (docs/volumes.md,
"Billing"). Prints the SKU and both prices; a bad argument exits 1 naming it (``--per-gb-month``: ...)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from billing.domain.pricing import price_shown
from billing.management.commands._clock import parse_price, parse_region, parse_start, refusals_named
from billing.models import StorageKind
from billing.services.storage import storage_price_set
from core.actor import Actor

OPTION = {"region": "--region", "storage_kind": "--kind", "per_gb_month": "--per-gb-month"}


class Command(BaseCommand):
    help = "Schedule the price of a storage kind in a region, per GB-month (never in the past)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--region", required=True, help="The region's code, e.g. eu-west.")
        parser.add_argument("--kind", required=True, choices=StorageKind.values, help="The storage kind.")
        parser.add_argument("--per-gb-month", required=True, help="The price of a GB for 730 hours, e.g. 0.07.")
        parser.add_argument("--from", dest="start", help="When it starts, ISO-8601 (default: now).")

    def handle(self, *args: Any, **options: Any) -> None:
        region = parse_region(options["region"])
        per_gb_month = parse_price("--per-gb-month", options["per_gb_month"])
        with refusals_named(OPTION):
            price = storage_price_set(
                region=region,
                storage_kind=options["kind"],
                price_per_gb_month=per_gb_month,
                effective_from=parse_start(options["start"]),
                actor=Actor.system("storage_price_set"),
            )
        self.stdout.write(
            f"{price.sku.code}: {price.per_gb_month} {price.sku.currency} per GB-month "
            f"({price_shown(price.unit_price_per_hour)} per GB-hour) from {price.effective_from.isoformat()}"
        )
