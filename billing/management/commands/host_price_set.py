"""``manage.py host_price_set --region CODE --unit vcpu|memory --per-hour PRICE [--from ISO]``: schedule the price
of a vCPU-hour or a GiB-hour beyond the bundle each GPU is sold with (docs/billing.md, "CPU and memory"). Prints
the SKU and the price; a bad argument exits 1 naming it (``--per-hour: ...``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from billing.domain.pricing import HOST_UNITS, price_shown
from billing.management.commands._clock import parse_price, parse_region, parse_start, refusals_named
from billing.services.host import host_price_set
from core.actor import Actor

OPTION = {"region": "--region", "unit": "--unit", "unit_price_per_hour": "--per-hour"}


class Command(BaseCommand):
    help = "Schedule the price of a vCPU-hour or GiB-hour beyond the bundle in a region (never in the past)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--region", required=True, help="The region's code, e.g. eu-west.")
        parser.add_argument("--unit", required=True, choices=HOST_UNITS, help="vcpu or memory (per GiB).")
        parser.add_argument("--per-hour", required=True, help="The price of one vCPU or GiB for an hour, e.g. 0.02.")
        parser.add_argument("--from", dest="start", help="When it starts, ISO-8601 (default: now).")

    def handle(self, *args: Any, **options: Any) -> None:
        region = parse_region(options["region"])
        per_hour = parse_price("--per-hour", options["per_hour"])
        with refusals_named(OPTION):
            price = host_price_set(
                region=region,
                unit=options["unit"],
                unit_price_per_hour=per_hour,
                effective_from=parse_start(options["start"]),
                actor=Actor.system("host_price_set"),
            )
        what = "vCPU" if price.sku.unit == "vcpu" else "GiB"
        self.stdout.write(
            f"{price.sku.code}: {price_shown(price.unit_price_per_hour)} {price.sku.currency} per {what}-hour "
            f"from {price.effective_from.isoformat()}"
        )
