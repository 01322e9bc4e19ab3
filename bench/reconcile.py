"""The reconciliation benchmark: ``python -m bench.reconcile [--tenants 200] [--skus 10] [--hours 6]``.

PostgreSQL only: it drops and recreates its own database (``--database`` on ``--server``) and runs the local Stripe
server (``tests/fakes/stripe.py``) in-process, the whole process's clock moved to March 2027 (time-machine), so
the month is the same whatever the date. Not measured: ``--tenants`` tenants subscribed through
``stripe_account_sync``, ``--skus`` SKUs (a price each) in Stripe's catalog, and ``--hours`` sent rollups per
tenant x SKU (pushed by ``billing_push``). Measured: ``reconciliation_month`` for the month once the invoices are
finalized: seconds, Stripe requests, and whether it is clean (it must be). Exits 1 when it is not.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import time_machine

from bench.scratch import setup_scratch_django

MONTH = datetime(2027, 3, 1, tzinfo=UTC)
NEXT = datetime(2027, 4, 1, tzinfo=UTC)
HOUR_MS = 3_600_000


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.reconcile", description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--skus", type=int, default=10)
    parser.add_argument("--hours", type=int, default=6, help="rollups per tenant x SKU in the month")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database", default="ladder_bench_reconcile")
    args = parser.parse_args(argv)

    from tests.fakes.stripe import StripeServer

    stripe_server = StripeServer(api_key="sk_test_ladder").start()
    travel = time_machine.travel(MONTH + timedelta(minutes=1), tick=True)
    travel.start()
    setup_scratch_django(
        "bench.reconcile",
        args.server,
        args.database,
        STRIPE_API_KEY="sk_test_ladder",
        STRIPE_API_BASE=stripe_server.url,
        STRIPE_METER_EVENTS_PER_SECOND="100000",
    )
    from billing.domain.metering import to_ms
    from billing.models import PushState, Sku, SkuPrice, UsageRollup
    from billing.services.reconcile import reconciliation_month
    from billing.services.stripe_push import billing_push
    from billing.services.stripe_sync import stripe_account_sync, stripe_sync_catalog
    from provisioning.models import GpuModel, Region
    from tenancy.models import Tenant

    region = Region.objects.create(code="bench", name="Bench", jurisdiction="EU")
    skus = []
    for k in range(args.skus):
        model = GpuModel.objects.create(name=f"BENCH-{k}", memory_gb=80, cc_capable=False)
        sku = Sku(rung="container", gpu_model=model, unit="gpu", mig_profile="", region=region)
        sku.save()
        SkuPrice.objects.create(sku=sku, effective_from=MONTH - timedelta(days=40), unit_price_per_hour=Decimal("3.6"))
        skus.append(sku)
    tenants = Tenant.objects.bulk_create(Tenant(slug=f"bench-{i}", name=f"Bench {i}") for i in range(args.tenants))
    began = time.monotonic()
    stripe_sync_catalog()
    for tenant in tenants:
        stripe_account_sync(tenant=tenant)
    setup = time.monotonic() - began
    prices = {p.sku_id: p for p in SkuPrice.objects.all()}
    rows = [
        UsageRollup(
            tenant=tenant,
            sku=sku,
            price=prices[sku.pk],
            window_ms=to_ms(MONTH + timedelta(days=1 + h, hours=t % 24)),
            batch=1,
            quantity_milli=(1 + t % 4) * 3_600_000,
            amount=Decimal("3.6") * (1 + t % 4),
            currency="usd",
            meter_value=(1 + t % 4) * 3_600,
            push_state=PushState.PENDING,
        )
        for t, tenant in enumerate(tenants)
        for sku in skus
        for h in range(args.hours)
    ]
    UsageRollup.objects.bulk_create(rows, batch_size=5000)
    travel.stop()
    travel = time_machine.travel(MONTH + timedelta(days=args.hours + 2), tick=True)
    travel.start()
    began = time.monotonic()
    report = billing_push()
    push = time.monotonic() - began
    travel.stop()
    travel = time_machine.travel(NEXT + timedelta(hours=2), tick=True)
    travel.start()

    before = stripe_server.requests
    began = time.monotonic()
    result = reconciliation_month(month="2027-03")
    seconds = time.monotonic() - began
    requests = stripe_server.requests - before
    travel.stop()
    stripe_server.stop()

    lines = len(result.result.lines)
    print(f"setup: {args.tenants} tenants subscribed, catalog of {args.skus} SKUs in {setup:.1f} s")
    print(f"push: {report} in {push:.1f} s")
    print(
        f"reconciliation of {len(rows)} rollups, {lines} tenant x SKU x price lines: {seconds:.2f} s, "
        f"{requests} Stripe requests ({requests / seconds:.0f}/s), {len(result.result.differences)} differences, "
        f"{len(result.result.unexplained)} unexplained, mode {result.mode}"
    )
    if not result.clean or report.sent != len(rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
