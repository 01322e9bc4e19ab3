"""Writes of the billing side other than the ledger: the price book, billing accounts, budgets (alerts and the
hard stop), payment standing (suspension after a failed payment's grace) and the admission check that every new
allocation passes."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from billing.domain.pricing import PRICE_PLACES, discounted, price_fits
from billing.models import (
    BillingAccount,
    BudgetAlert,
    CostBasis,
    Invoice,
    Notification,
    Sku,
    SkuPrice,
    StorageCostBasis,
    StorageKind,
)
from billing.selectors import month_of, month_spend, sku_shapes, stripe_enabled
from billing.services.ledger import sku_get
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid, ServiceError
from core.sql import Lookup
from core.tasks import enqueue
from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass
from provisioning.models import GpuModel, Hall, Region
from tenancy.models import Membership, Tenant, TenantState
from tenancy.services import TenantNotActive, tenant_require_writable

log = logging.getLogger(__name__)
SYSTEM = Actor.system("billing")
BUDGET_THRESHOLDS = (50, 80, 100)


class PaymentRequired(ServiceError):
    """402: the tenant must pay (or raise its budget) before it buys more."""

    status = 402


# --- price book ------------------------------------------------------------------------------------------------


@transaction.atomic
def price_set(
    *,
    sku: Sku,
    unit_price_per_hour: Decimal,
    effective_from: datetime,
    actor: Actor,
    quoted: dict[str, str] | None = None,
    discount_pct: Decimal | None = None,
) -> SkuPrice:
    """Schedule a SKU's price from ``effective_from`` on. A price never starts in the past: usage already
    metered keeps the price it was metered at. ``quoted``: the price as the operator wrote it, when that is not per
    unit-hour (a storage price per GB-month), kept in the audit record beside the price per hour.

    A compute SKU sold as spot at a discount (``spot_price_set``) keeps it: a new on-demand price schedules the
    spot price with it, at the same discount, from the same moment."""
    if unit_price_per_hour < 0:
        raise Invalid("invalid_price", "A price cannot be negative.", field="unit_price_per_hour")
    if not price_fits(unit_price_per_hour):
        raise Invalid(
            "invalid_price",
            f"A price per hour has at most {PRICE_PLACES} decimal places: {unit_price_per_hour} has more.",
            field="unit_price_per_hour",
        )
    if effective_from < timezone.now() - timedelta(minutes=1):
        raise Invalid("price_in_past", "A price cannot start in the past.", field="effective_from")
    if SkuPrice.objects.filter(sku=sku, effective_from=effective_from).exists():
        raise Conflict("price_exists", "The SKU already has a price starting then.", field="effective_from")
    price = SkuPrice.objects.create(
        sku=sku, unit_price_per_hour=unit_price_per_hour, effective_from=effective_from, discount_pct=discount_pct
    )
    audit_record(
        actor=actor,
        action="price.scheduled",
        target_type="sku",
        target_id=sku.pk,
        data={
            "sku": sku.code,
            "unit_price_per_hour": str(unit_price_per_hour),
            "currency": sku.currency,
            "effective_from": effective_from.isoformat(),
            **({"discount_pct": str(discount_pct)} if discount_pct is not None else {}),
            **(quoted or {}),
        },
    )
    if sku.capacity_class == DEFAULT_CLASS and not sku.is_storage:
        spot = _spot_sku(sku, make=False)
        standing = spot and spot.prices.filter(effective_from__lte=effective_from).order_by("effective_from").last()
        if spot and standing and standing.discount_pct is not None and standing.effective_from != effective_from:
            _spot_follow(spot, on_demand=price, discount_pct=standing.discount_pct, actor=actor)
    return price


def _spot_sku(sku: Sku, *, make: bool) -> Sku | None:
    """The spot twin of an on-demand compute SKU (made when ``make``)."""
    shape = {
        "rung": sku.rung,
        "gpu_model": sku.gpu_model,
        "unit": sku.unit,
        "mig_profile": sku.mig_profile,
        "region": sku.region,
        "capacity_class": CapacityClass.SPOT.value,
    }
    found = Sku.objects.filter(**shape).first()
    if found is None and make:
        found = Sku(**shape, currency=sku.currency)
        found.save()
    return found


def _spot_follow(spot: Sku, *, on_demand: SkuPrice, discount_pct: Decimal, actor: Actor) -> SkuPrice:
    """The spot price that goes with an on-demand price: the same moment, the discount off it."""
    return price_set(
        sku=spot,
        unit_price_per_hour=discounted(on_demand.unit_price_per_hour, discount_pct),
        effective_from=on_demand.effective_from,
        actor=actor,
        discount_pct=discount_pct,
        quoted={"on_demand_price_per_hour": str(on_demand.unit_price_per_hour)},
    )


@transaction.atomic
def spot_price_set(*, sku: Sku, discount_pct: Decimal, effective_from: datetime, actor: Actor) -> SkuPrice:
    """Sell an on-demand compute SKU as spot from ``effective_from``, at ``discount_pct`` percent off its on-demand
    price then (and off each on-demand price scheduled after it, as ``price_set`` keeps doing). The spot SKU is
    ``<the SKU's code>/spot``, with prices, Stripe meters and invoice lines of its own. Returns its price then."""
    if sku.is_storage or sku.capacity_class != DEFAULT_CLASS:
        raise Invalid("validation_error", "Spot is a discount off an on-demand compute SKU.", field="sku")
    if not Decimal(0) < discount_pct < Decimal(100) or discount_pct != discount_pct.quantize(Decimal("0.01")):
        raise Invalid(
            "validation_error", "A spot discount is more than 0 and less than 100 percent, to 2 places.",
            field="discount_pct",
        )  # fmt: skip
    base = sku.prices.filter(effective_from__lte=effective_from).order_by("effective_from").last()
    if base is None:
        raise Invalid("not_priced", f"{sku.code} has no on-demand price at {effective_from.isoformat()}.", field="sku")
    spot = _spot_sku(sku, make=True)
    assert spot is not None  # noqa: S101 - made above
    moment = SkuPrice(sku=sku, unit_price_per_hour=base.unit_price_per_hour, effective_from=effective_from)
    first = _spot_follow(spot, on_demand=moment, discount_pct=discount_pct, actor=actor)
    for later in sku.prices.filter(effective_from__gt=effective_from).order_by("effective_from"):
        if not spot.prices.filter(effective_from=later.effective_from).exists():
            _spot_follow(spot, on_demand=later, discount_pct=discount_pct, actor=actor)
    return first


def reserved_usage_priced(*, gpu_model: GpuModel, region: Region, at: datetime, actor: Actor) -> int:
    """Price every shape of ``gpu_model`` in ``region`` as reserved at nothing from ``at``, where it has no price yet:
    reserved work is metered on its own SKUs (``<code>/reserved``, so its use shows on the invoice and in FOCUS), and
    its reservation's term pays for it (``billing.domain.commitments``). Returns the prices made."""
    made = 0
    for rung, unit, profile in sku_shapes(gpu_model):
        sku = sku_get(
            rung=rung,
            gpu_model=gpu_model,
            unit=unit,
            mig_profile=profile,
            region=region,
            capacity_class=CapacityClass.RESERVED.value,
        )
        if not sku.prices.exists():
            price_set(sku=sku, unit_price_per_hour=Decimal(0), effective_from=at, actor=actor)
            made += 1
    return made


# --- cost basis --------------------------------------------------------------------------------------------------

COST_PARTS = ("capex", "power", "space", "network")


@transaction.atomic
def cost_basis_add(
    *,
    gpu_model: GpuModel,
    hall: Hall,
    effective_from: datetime,
    parts: dict[str, Decimal],
    currency: str,
    actor: Actor,
) -> CostBasis:
    """What a GPU-hour of ``gpu_model`` in ``hall`` costs from ``effective_from`` on, by part (capex amortisation,
    power, space, network, each per GPU-hour). It may start in the past: margin reports are computed from the cost
    book when they are read, so a back-dated entry restates the months after it (audited, with who did it)."""
    for name in COST_PARTS:
        value = parts.get(name)
        if value is None:
            raise Invalid("validation_error", f"The {name} cost per GPU-hour is required.", field=name)
        if value < 0:
            raise Invalid("validation_error", f"The {name} cost per GPU-hour cannot be negative.", field=name)
    if CostBasis.objects.filter(gpu_model=gpu_model, hall=hall, effective_from=effective_from).exists():
        raise Conflict(
            "cost_basis_exists", "This model and hall already have a cost basis starting then.", field="effective_from"
        )
    basis = CostBasis.objects.create(
        gpu_model=gpu_model,
        hall=hall,
        effective_from=effective_from,
        currency=currency,
        capex_per_gpu_hour=parts["capex"],
        power_per_gpu_hour=parts["power"],
        space_per_gpu_hour=parts["space"],
        network_per_gpu_hour=parts["network"],
    )
    audit_record(
        actor=actor,
        action="billing.cost_basis_added",
        target_type="cost_basis",
        target_id=basis.pk,
        data={
            "gpu_model": gpu_model.name,
            "hall": hall.code,
            "effective_from": effective_from.isoformat(),
            "currency": currency,
            **{f"{name}_per_gpu_hour": str(parts[name]) for name in COST_PARTS},
        },
    )
    return basis


@transaction.atomic
def storage_cost_basis_add(
    *,
    region: Region,
    storage_kind: str,
    effective_from: datetime,
    cost_per_gb_month: Decimal,
    currency: str,
    actor: Actor,
) -> StorageCostBasis:
    """What a provisioned GB of ``storage_kind`` (filesystem, block, snapshot) in ``region`` costs per storage
    month from ``effective_from`` on. Like the GPU cost basis: added, never edited, and it may start in the past
    (the margin report is computed when read; audited with who did it)."""
    if storage_kind not in StorageKind.values:
        raise Invalid("validation_error", f"A storage kind is {', '.join(StorageKind.values)}.", field="storage_kind")
    if cost_per_gb_month < 0:
        raise Invalid("validation_error", "A cost cannot be negative.", field="cost_per_gb_month")
    if StorageCostBasis.objects.filter(
        region=region, storage_kind=storage_kind, effective_from=effective_from
    ).exists():
        raise Conflict(
            "cost_basis_exists",
            "This region and storage kind already have a cost basis starting then.",
            field="effective_from",
        )
    basis = StorageCostBasis.objects.create(
        region=region,
        storage_kind=storage_kind,
        effective_from=effective_from,
        currency=currency,
        cost_per_gb_month=cost_per_gb_month,
    )
    audit_record(
        actor=actor,
        action="billing.storage_cost_basis_added",
        target_type="storage_cost_basis",
        target_id=basis.pk,
        data={
            "region": region.code,
            "storage_kind": storage_kind,
            "effective_from": effective_from.isoformat(),
            "currency": currency,
            "cost_per_gb_month": str(cost_per_gb_month),
        },
    )
    return basis


# --- accounts --------------------------------------------------------------------------------------------------


def billing_account(tenant: Tenant) -> BillingAccount:
    account, _ = BillingAccount.objects.get_or_create(
        tenant=tenant, defaults={"currency": settings.LADDER_BILLING_CURRENCY}
    )
    return account


def billing_account_open(*, tenant: Tenant) -> BillingAccount:
    """At signup: the account, and (after commit, when Stripe is configured) its Stripe customer and
    subscription."""
    account = billing_account(tenant)
    if stripe_enabled():
        enqueue("billing.tasks.stripe_account_sync", tenant.pk, best_effort=True)
    return account


# --- admission ---------------------------------------------------------------------------------------------------


# Asked before every allocation: plain SQL, built once (the ORM compiled it again on every request).
_hard_budget = Lookup(BillingAccount, "{tenant} = %s AND {budget_hard_stop} = %s AND {budget_monthly} IS NOT NULL")


def admission_check(*, tenant: Tenant, now: datetime | None = None) -> None:
    """May the tenant start something new? Raises 402 ``payment_required`` / ``budget_exceeded``, or 403
    ``tenant_not_active`` while it is closing."""
    if tenant.state == TenantState.SUSPENDED:
        raise PaymentRequired(
            "payment_required", "The account is suspended for an unpaid invoice; pay it to start new work."
        )
    if tenant.state != TenantState.ACTIVE:
        raise TenantNotActive(tenant.state, f"The tenant is {tenant.state}: it cannot request capacity.")
    account = _hard_budget(tenant.pk, True)
    if account is not None and account.budget_monthly is not None:
        spend = month_spend(tenant=tenant, now=now or timezone.now())
        if spend >= account.budget_monthly:
            raise PaymentRequired(
                "budget_exceeded",
                f"This month's spend {spend} {account.currency} has reached the budget of {account.budget_monthly}; "
                "raise the budget or wait for next month.",
                extra={"spend": str(spend), "budget": str(account.budget_monthly)},
            )


# --- budgets -------------------------------------------------------------------------------------------------------


@transaction.atomic
def budget_set(*, tenant: Tenant, monthly: Decimal | None, hard_stop: bool, actor: Actor) -> BillingAccount:
    """A suspended tenant may still set its budget; a closing one may not."""
    tenant_require_writable(tenant, actor=actor)
    if monthly is not None and monthly <= 0:
        raise Invalid("invalid_budget", "A budget must be more than zero (or null for none).", field="monthly")
    account = billing_account(tenant)
    account.budget_monthly = monthly
    account.budget_hard_stop = hard_stop and monthly is not None
    account.save(update_fields=["budget_monthly", "budget_hard_stop"])
    audit_record(
        actor=actor,
        action="budget.set",
        target_type="tenant",
        target_id=tenant.pk,
        tenant=tenant,
        data={"monthly": None if monthly is None else str(monthly), "hard_stop": account.budget_hard_stop},
    )
    return account


@dataclass(frozen=True)
class BudgetCheck:
    crossed: list[int]  # thresholds newly crossed (alerted now)
    stop: bool  # a hard stop is set and the budget is used up: what runs must stop (``lifecycle.budget_enforce``)


def budget_check(*, tenant: Tenant, now: datetime) -> BudgetCheck:
    """Alert once per month and threshold crossed; say whether a hard stop is due."""
    account = BillingAccount.objects.filter(tenant=tenant, budget_monthly__isnull=False).first()
    if account is None or account.budget_monthly is None:
        return BudgetCheck(crossed=[], stop=False)
    spend = month_spend(tenant=tenant, now=now)
    percent = spend * 100 / account.budget_monthly
    month = month_of(now)[0].date()
    crossed = []
    for threshold in BUDGET_THRESHOLDS:
        if percent < threshold:
            break
        with transaction.atomic():
            _, created = BudgetAlert.objects.get_or_create(
                tenant=tenant, month=month, threshold=threshold, defaults={"spend": spend}
            )
            if created:
                crossed.append(threshold)
                stop = (
                    " New allocations, volumes and volume growth are refused and running work stops; your volumes "
                    "and their data are kept (and billed)."
                    if account.budget_hard_stop
                    else ""
                )
                notify(
                    tenant=tenant,
                    kind="budget",
                    subject=f"Ladder: {threshold}% of your monthly budget used",
                    body=f"This month's spend is {spend} {account.currency.upper()}, {threshold}% of the budget of "
                    f"{account.budget_monthly}." + (stop if threshold == 100 else ""),
                )
    return BudgetCheck(crossed=crossed, stop=account.budget_hard_stop and percent >= 100)


def notify(*, tenant: Tenant, kind: str, subject: str, body: str) -> Notification:
    """Record a notification and e-mail the tenant's owners and admins (after commit)."""
    recipients = sorted(
        email
        for email in Membership.objects.filter(tenant=tenant, role__in=("owner", "admin", "billing"))
        .exclude(user__email="")
        .values_list("user__email", flat=True)
    )
    note = Notification.objects.create(tenant=tenant, kind=kind, subject=subject, body=body, emailed_to=recipients)
    if recipients:

        def send() -> None:
            try:
                send_mail(subject, body, None, recipients)
            except Exception:  # the record stays; a broken mail relay must not undo the alert
                log.warning("could not e-mail notification %s", note.pk, exc_info=True)

        transaction.on_commit(send)
    return note


# --- payment standing ------------------------------------------------------------------------------------------


def payment_failed(*, account: BillingAccount, at: datetime) -> None:
    if account.payment_failed_at is None:
        BillingAccount.objects.filter(pk=account.pk, payment_failed_at=None).update(payment_failed_at=at)
        account.payment_failed_at = at
        notify(
            tenant=account.tenant,
            kind="payment_failed",
            subject="Ladder: a payment failed",
            body=f"A payment failed. Unless it is paid within {settings.LADDER_PAYMENT_GRACE_HOURS:g} hours the "
            "account is suspended and new work is refused.",
        )
    tenants_suspend_overdue(now=at, tenant_id=account.tenant_id)


def payment_succeeded(*, account: BillingAccount) -> None:
    """An invoice was paid: the tenant is in good standing again once no invoice's last payment failed."""
    if Invoice.objects.filter(tenant_id=account.tenant_id, payment_failed=True, status="open").exists():
        return
    BillingAccount.objects.filter(pk=account.pk).update(payment_failed_at=None)
    tenant = account.tenant
    if Tenant.objects.filter(pk=tenant.pk, state=TenantState.SUSPENDED).update(state=TenantState.ACTIVE):
        audit_record(
            actor=SYSTEM,
            action="tenant.reinstated",
            target_type="tenant",
            target_id=tenant.pk,
            tenant=tenant,
            data={"why": "invoice paid"},
        )


def tenants_suspend_overdue(*, now: datetime, tenant_id: int | None = None) -> int:
    """Suspend active tenants whose failed payment is older than the grace period."""
    cutoff = now - timedelta(hours=settings.LADDER_PAYMENT_GRACE_HOURS)
    overdue = BillingAccount.objects.filter(payment_failed_at__lte=cutoff, tenant__state=TenantState.ACTIVE)
    if tenant_id is not None:
        overdue = overdue.filter(tenant_id=tenant_id)
    done = 0
    for account in overdue.select_related("tenant"):
        with transaction.atomic():
            if Tenant.objects.filter(pk=account.tenant_id, state=TenantState.ACTIVE).update(
                state=TenantState.SUSPENDED
            ):
                done += 1
                audit_record(
                    actor=SYSTEM,
                    action="tenant.suspended",
                    target_type="tenant",
                    target_id=account.tenant_id,
                    tenant=account.tenant,
                    data={
                        "why": "payment failed",
                        "since": account.payment_failed_at.isoformat() if account.payment_failed_at else None,
                    },
                )
    return done
