"""``manage.py billing_reconcile --month YYYY-MM [--tenant SLUG] [--json]``: the month's ledger against what the
outbox sent, Stripe's meters and Stripe's invoices, per tenant x SKU x price; every difference with its cause.
Exits 0 when every difference is explained, 1 otherwise (and 2 for a bad month or tenant, or Stripe unreadable)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.domain.reconcile import Cause
from billing.services.reconcile import Reconciliation, reconciliation_as_json, reconciliation_month
from core.errors import ServiceError
from tenancy.models import Tenant


class Command(BaseCommand):
    help = "Reconcile a month: ledger, outbox, Stripe's meters and invoices; exit 1 on anything unexplained."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", required=True, help="The month, YYYY-MM (UTC).")
        parser.add_argument("--tenant", help="Only this tenant (its slug).")
        parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = None
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant {options['tenant']!r}.", returncode=2)
        try:
            report = reconciliation_month(month=options["month"], tenant=tenant)
        except ServiceError as error:
            raise CommandError(error.detail, returncode=2) from error
        if options["json"]:
            self.stdout.write(json.dumps(reconciliation_as_json(report), indent=2))
        else:
            self._table(report)
        if not report.clean:
            raise CommandError(f"{len(report.result.unexplained)} unexplained differences", returncode=1)

    def _table(self, report: Reconciliation) -> None:
        lines = report.result.lines
        self.stdout.write(
            f"Reconciliation of {report.month} ({report.mode}): {len(lines)} tenant x SKU x price lines, "
            f"{len(report.result.differences)} differences, {len(report.result.unexplained)} unexplained"
        )
        for note in report.notes:
            self.stdout.write(f"  note: {note}")
        if not report.result.differences:
            self.stdout.write("Clean: the ledger, the outbox, Stripe's meters and its invoices agree.")
            return
        header = ("tenant", "sku", "price", "stage", "cause", "unit-s", "minor", "detail")
        rows = [
            (
                d.key.tenant,
                d.key.sku,
                d.key.price,
                d.stage.value,
                d.cause.value.upper() if d.cause == Cause.UNEXPLAINED else d.cause.value,
                f"{d.quantity.normalize():f}",
                f"{d.amount.normalize():f}",
                d.detail,
            )
            for d in report.result.differences
        ]
        widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header) - 1)]
        for row in (header, *rows):
            cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths, strict=True)]
            self.stdout.write("  ".join([*cells, str(row[-1])]))
