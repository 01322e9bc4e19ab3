"""``manage.py storage_price_set --region CODE --kind filesystem|block|snapshot --per-gb-month PRICE [--from ISO]``:
schedule a storage price, quoted per GB-month as operators read it and kept per GB-hour (docs/volumes.md,
"Billing"). Prints the SKU and both prices; a bad argument exits 1 naming it (``--per-gb-month``: ...)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from billing.domain.pricing import price_shown
from billing.models import StorageKind
from billing.services.storage import storage_price_set
from core.actor import Actor
from core.errors import ServiceError
from provisioning.models import Region

OPTION = {"region": "--region", "storage_kind": "--kind", "per_gb_month": "--per-gb-month"}


class Command(BaseCommand):
    help = "Schedule the price of a storage kind in a region, per GB-month (never in the past)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--region", required=True, help="The region's code, e.g. eu-west.")
        parser.add_argument("--kind", required=True, choices=StorageKind.values, help="The storage kind.")
        parser.add_argument("--per-gb-month", required=True, help="The price of a GB for 730 hours, e.g. 0.07.")
        parser.add_argument("--from", dest="start", help="When it starts, ISO-8601 (default: now).")

    def handle(self, *args: Any, **options: Any) -> None:
        region = Region.objects.filter(code=options["region"]).first()
        if region is None:
            raise CommandError(f"--region: there is no region {options['region']!r}")
        try:
            per_gb_month = Decimal(options["per_gb_month"])
        except InvalidOperation:
            raise CommandError(f"--per-gb-month: {options['per_gb_month']!r} is not a number") from None
        try:
            price = storage_price_set(
                region=region,
                storage_kind=options["kind"],
                price_per_gb_month=per_gb_month,
                effective_from=_start(options["start"]),
                actor=Actor.system("storage_price_set"),
            )
        except ServiceError as error:
            where = OPTION.get(error.field or "", "--from" if error.field == "effective_from" else "")
            raise CommandError(f"{where}: {error.detail}" if where else error.detail) from None
        self.stdout.write(
            f"{price.sku.code}: {price.per_gb_month} {price.sku.currency} per GB-month "
            f"({price_shown(price.unit_price_per_hour)} per GB-hour) from {price.effective_from.isoformat()}"
        )


def _start(value: str | None) -> datetime:
    if value is None:
        return timezone.now()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--from: {value!r} is not an ISO-8601 time (e.g. 2027-01-01T00:00:00Z)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
