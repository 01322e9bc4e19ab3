"""The customer's way through the product across apps: joining, buying, budgets (leaving is ``closure.py``).

Each workflow is a function here (and, where it runs in the background, a task in ``lifecycle/tasks.py``); the
apps below never call each other, only lifecycle calls several of them.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from billing.domain.pricing import HOST_UNITS
from billing.models import BillingAccount, Sku
from billing.selectors import host_priced_regions, priced_pools, sku_code
from billing.services.accounts import admission_check, billing_account_open, budget_check, budget_set, notify
from core.actor import Actor
from core.audit import audit_record
from core.metrics import BUDGET_HARD_STOPS
from lifecycle.services.workloads import workload_admit
from provisioning.domain.node_host import bundle_model, host_extra
from provisioning.domain.placement.decision import Pricing, Request
from provisioning.domain.rungs import rungs_where
from provisioning.domain.states import WORKING
from provisioning.domain.workloads import Workload
from provisioning.drivers.base import provisioner
from provisioning.models import Allocation
from provisioning.services.placing import AllocationSpec
from provisioning.services.placing import allocation_request as place
from provisioning.services.stopping import allocation_stop
from tenancy.models import Tenant
from tenancy.services import tenant_create, tenant_require_writable

User = get_user_model()
BUDGET = Actor.system("billing")  # who stops work when a budget runs out


# --- joining ------------------------------------------------------------------------------------------------------


@transaction.atomic
def tenant_signup(*, slug: str, name: str, username: str, email: str, password: str | None, actor: Actor) -> Tenant:
    """A new tenant with its owner, and its billing account (its Stripe customer follows after commit)."""
    tenant = tenant_create(slug=slug, name=name, username=username, email=email, password=password, actor=actor)
    billing_account_open(tenant=tenant)
    return tenant


def _free_slug(name: str) -> str:
    """A tenant slug from the organisation's name: lower-case words joined by hyphens, numbered when taken."""
    base = slugify(name)[:30].strip("-") or "team"
    slug, n = base, 1
    while Tenant.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def customer_signup(*, organisation: str, email: str, password: str, actor: Actor) -> Tenant:
    """Self-service signup: a tenant for the organisation with its owner (username: the e-mail address), who signs
    in once the address is confirmed (``customer_confirm``). Its Stripe customer follows after commit."""
    email = email.strip().lower()
    tenant = tenant_signup(
        slug=_free_slug(organisation),
        name=organisation.strip(),
        username=email,
        email=email,
        password=password,
        actor=actor,
    )
    User.objects.filter(username=email).update(is_active=False)
    return tenant


@transaction.atomic
def customer_confirm(*, user: Any, actor: Actor) -> bool:
    """The owner confirmed their e-mail address: they may sign in. False when it was confirmed already."""
    if not User.objects.filter(pk=user.pk, is_active=False, last_login=None).update(is_active=True):
        return False
    membership = user.membership
    audit_record(
        actor=actor,
        action="member.email_confirmed",
        target_type="membership",
        target_id=membership.pk,
        tenant=membership.tenant,
        data={"username": user.username},
    )
    return True


# --- buying ---------------------------------------------------------------------------------------------------------


def allocation_request(
    *, tenant: Tenant, name: str, spec: AllocationSpec, actor: Actor, workload: Workload | None = None
) -> Allocation:
    """Admission first (standing, payment, budget: 402 / 409), then the workload (422, or 409 ``residency`` for
    datasets elsewhere), then placement, only where the shape has a price now (409 ``not_priced``:
    ``placement_pricing``)."""
    tenant_require_writable(tenant, actor=actor)
    admission_check(tenant=tenant)
    if workload is not None:
        spec = workload_admit(tenant=tenant, workload=workload, spec=spec)
    # What spot work it may preempt would lose is read from the driver's checkpoints.
    checkpoints = provisioner().last_checkpoint
    return place(tenant=tenant, name=name, spec=spec, actor=actor, workload=workload, last_checkpoint=checkpoints)


def placement_pricing(request: Request, at: datetime) -> Pricing:
    """Which pools (GPU model x region) sell the request's shape in its capacity class at ``at``: billing's price
    book as the placement engine reads it. Installed as provisioning's price source (``lifecycle/apps.py``), so
    every new placement of a tenant's workload asks it: a request, a job restarted after a fault, an idle endpoint
    woken, spot work requeued. A request that asks vCPUs or memory beyond its bundle is sold only in regions that
    price them (``billing.services.host``). A move by the defragmenter stays in its pool and a serverless scale-up
    in its devices: their SKU, and its price, do not change."""
    rung, profile, klass = request.rung.value, request.mig_profile, request.capacity_class.value
    sold = priced_pools(rung=rung, mig_profile=profile, models=request.models, at=at, capacity_class=klass)
    model = bundle_model(request.models)
    extra = host_extra(request.rung, model, request.gpus, request.cpu_milli, request.memory_mib)
    units = [unit for unit, taken in zip(HOST_UNITS, extra, strict=True) if taken]
    regions = host_priced_regions(units=units, at=at) if units else None

    def name(gpu_model: str, region: str) -> str:
        if regions is not None and region not in regions and (gpu_model, region) in sold:
            return " and ".join(Sku.host_code(unit, region) for unit in units)  # what is not priced is the host's
        return sku_code(rung=rung, mig_profile=profile, gpu_model=gpu_model, region=region, capacity_class=klass)

    if regions is None:
        return Pricing(priced=sold, sku=name)
    # Beyond the bundle: only where the region prices the vCPUs and memory asked too.
    return Pricing(priced=frozenset(pool for pool in sold if pool[1] in regions), sku=name)


# --- budgets ------------------------------------------------------------------------------------------------------


def budget_enforce(*, tenant: Tenant, now: datetime) -> list[int]:
    """Alert at the thresholds newly crossed and, with a hard stop once the budget is used up, stop what runs.
    Returns the thresholds crossed."""
    check = budget_check(tenant=tenant, now=now)
    if check.stop:
        budget_stop(tenant=tenant, now=now)
    return check.crossed


def budgets_enforce(*, now: datetime) -> dict[str, list[int]]:
    """``budget_enforce`` for every tenant with a budget; the thresholds crossed per tenant slug."""
    crossed = {}
    for account in BillingAccount.objects.filter(budget_monthly__isnull=False).select_related("tenant"):
        crossed[account.tenant.slug] = budget_enforce(tenant=account.tenant, now=now)
    return crossed


@transaction.atomic
def budget_update(
    *, tenant: Tenant, monthly: Decimal | None, hard_stop: bool, actor: Actor, now: datetime
) -> BillingAccount:
    """Set the budget and apply it at once (a budget already used up alerts, and stops work with a hard stop)."""
    account = budget_set(tenant=tenant, monthly=monthly, hard_stop=hard_stop, actor=actor)
    budget_enforce(tenant=tenant, now=now)
    return account


def budget_stop(*, tenant: Tenant, now: datetime) -> dict[str, int]:
    """The hard stop at ``now``: running non-job allocations stop then; jobs are told and stop at their next
    checkpoint."""
    counts = {"stopped": 0, "jobs_noticed": 0}
    live = Allocation.objects.filter(tenant=tenant, state__in=WORKING)
    checkpointed = rungs_where(lambda f: f.restarts_from_checkpoint)
    for allocation in live.exclude(rung__in=checkpointed):
        allocation_stop(allocation=allocation, actor=BUDGET, at=now)
        counts["stopped"] += 1
    for job in live.filter(rung__in=checkpointed, stop_at_checkpoint_since=None):
        if Allocation.objects.filter(pk=job.pk, stop_at_checkpoint_since=None).update(stop_at_checkpoint_since=now):
            counts["jobs_noticed"] += 1
            notify(
                tenant=tenant,
                kind="budget_stop",
                subject=f"Ladder: job {job.name} stops at its next checkpoint",
                body=f"The monthly budget is used up; job {job.name} (allocation {job.pk}) stops after its next "
                "checkpoint so no work is lost.",
            )
    for effect, count in counts.items():
        BUDGET_HARD_STOPS.labels(effect).inc(count)
    return counts
