"""What capacity classes mean to a tenant beyond placement (docs/capacity.md): being told when spot work is
preempted, and reservations: made and ended by operators, billed for their term, used by the tenant's reserved
work."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from billing import tasks as billing_tasks
from billing.domain.commitments import ORDER_MAX_DAYS, PRICED_AS, TERM_DISCOUNTS, term_discount
from billing.domain.pricing import discounted
from billing.selectors import billing_currency, price_index, reservation_base, sku_code, stripe_enabled
from billing.services.accounts import notify, reserved_usage_priced
from billing.services.ledger import usage_rescale
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid
from core.tasks import enqueue
from provisioning.domain.capacity_classes import DEFAULT_CLASS
from provisioning.domain.placement.isolation import hall_allowed
from provisioning.domain.states import HOLDS_DEVICES, AllocationState
from provisioning.fleet_cache import fleet_read, journal_fleet_changed
from provisioning.models import Allocation, AllocationPreemption, GpuModel, Hall, Node, Reservation
from provisioning.selectors import hall_info, tenant_policy
from tenancy.locks import lock_tenant
from tenancy.models import Tenant, TenantState
from tenancy.services import tenant_require_writable


def preemption_notify(*, allocation: Allocation, preemption: AllocationPreemption) -> None:
    """Tell the tenant its spot work was preempted: the deadline it has to save by, the work at stake since its last
    checkpoint, and whether it will be requeued. Sent in the preemption's transaction (the e-mail after commit)."""
    seconds = round((preemption.deadline - preemption.noticed_at).total_seconds())
    then = (
        "It goes back to the queue and is placed again, from its checkpoint, when capacity returns."
        if preemption.requeued
        else "It stops; start it again when you need it (or ask for on_preemption: requeue on a job)."
    )
    since = preemption.checkpoint_at.isoformat() if preemption.checkpoint_at else "its start"
    notify(
        tenant=allocation.tenant,
        kind="preemption",
        subject=f"Ladder: spot allocation {allocation.name} is preempted; {seconds} s to save",
        body=f"Allocation {allocation.pk} ({allocation.name}) runs on spot capacity, and on-demand or reserved work "
        f"needs its GPUs. It was given notice at {preemption.noticed_at.isoformat()} (billing stopped then) and is "
        f"stopped at {preemption.deadline.isoformat()}: a job saves its checkpoint on SIGTERM within that time. "
        f"Work since {since} is at stake ({preemption.lost_ms / 1000:.0f} s). {then}",
    )


# --- reservations --------------------------------------------------------------------------------------------------

MAX_TERM = timedelta(days=3 * 366)  # three years, as the longest committed terms clouds sell


@transaction.atomic
def reservation_create(
    *,
    tenant: Tenant,
    gpu_model: GpuModel,
    hall: Hall,
    gpus: int,
    starts_at: datetime,
    ends_at: datetime,
    price_per_gpu_hour: Decimal,
    actor: Actor,
    now: datetime | None = None,
) -> Reservation:
    """Keep ``gpus`` whole GPUs of ``gpu_model`` in ``hall`` for the tenant from ``starts_at`` to ``ends_at``, billed
    at ``price_per_gpu_hour`` for the whole term (docs/capacity.md, "Reservations").

    Refused 409 ``tenant_not_active`` for a tenant that is suspended, closing or closed; 422 when the term or the
    price is not one (it ends before it starts, starts in the past, lasts more than
    three years; a price not above zero), when the count is not whole nodes of the pool, or when the tenant's
    residency does not allow the hall; 409 ``no_capacity`` when the pool cannot keep it: its GPUs less the other
    reservations overlapping the term, and, for a term that starts within the hour, what the pool holds free or
    lent to spot work now. Its reserved work is then priced (metered at nothing: the term pays for it)."""
    now = now or timezone.now()
    tenant_require_writable(tenant, actor=actor)
    if Tenant.objects.filter(pk=tenant.pk).values_list("state", flat=True).get() != TenantState.ACTIVE:
        raise Conflict("tenant_not_active", f"{tenant.slug} is not active: it cannot take on a reservation.")
    if ends_at <= starts_at:
        raise Invalid("validation_error", "A reservation ends after it starts.", field="ends_at")
    if starts_at < now - timedelta(minutes=1):
        raise Invalid("validation_error", "A reservation cannot start in the past.", field="starts_at")
    if ends_at - starts_at > MAX_TERM:
        raise Invalid("validation_error", "A reservation lasts at most three years.", field="ends_at")
    if price_per_gpu_hour <= 0:
        raise Invalid(
            "validation_error", "A reservation's price per GPU-hour is above zero.", field="price_per_gpu_hour"
        )
    refusal = hall_allowed(tenant_policy(tenant), hall_info(hall))
    if refusal is not None:
        raise Invalid("residency", f"{hall.code}: {refusal.message}", field="hall")
    counts = list(Node.objects.filter(hall=hall, gpu_model=gpu_model).values_list("gpu_count", flat=True))
    if not counts:
        raise Conflict("no_capacity", f"{hall.code} has no {gpu_model.name} nodes.", field="hall")
    per_node = max(counts)
    if gpus < 1 or gpus % per_node:
        raise Invalid(
            "validation_error", f"A reservation keeps whole nodes: a multiple of {per_node} GPUs.", field="gpus"
        )
    overlapping = Reservation.objects.filter(
        hall=hall, gpu_model=gpu_model, cancelled_at=None, starts_at__lt=ends_at, ends_at__gt=starts_at
    )
    kept = overlapping.aggregate(total=Sum("gpus"))["total"] or 0
    if kept + gpus > sum(counts):
        raise Conflict(
            "no_capacity",
            f"{hall.code} has {sum(counts)} {gpu_model.name} GPUs and {kept} of them are reserved over that term.",
            field="gpus",
        )
    if starts_at <= now + timedelta(hours=1):
        with fleet_read() as fleet:
            pool = (gpu_model.name, hall.code)
            free, _ = fleet.state.reclaimable(pool)
            kept_now, _ = fleet.state.kept(pool)
        if free - kept_now < gpus:
            raise Conflict(
                "no_capacity",
                f"Only {max(0, free - kept_now)} {gpu_model.name} GPUs in {hall.code} are free or lent to spot work "
                "now; start the reservation later.",
                field="gpus",
            )
    reservation = Reservation.objects.create(
        tenant=tenant,
        gpu_model=gpu_model,
        hall=hall,
        gpus=gpus,
        starts_at=starts_at,
        ends_at=ends_at,
        price_per_gpu_hour=price_per_gpu_hour,
        currency=billing_currency(tenant),
    )
    reserved_usage_priced(gpu_model=gpu_model, region=hall.region, at=now, actor=actor)
    audit_record(
        actor=actor,
        action="reservation.created",
        target_type="reservation",
        target_id=reservation.pk,
        tenant=tenant,
        data={
            "gpu_model": gpu_model.name,
            "hall": hall.code,
            "gpus": gpus,
            "starts_at": starts_at.isoformat(),
            "ends_at": ends_at.isoformat(),
            "price_per_gpu_hour": str(price_per_gpu_hour),
            "currency": reservation.currency,
        },
    )
    journal_fleet_changed()  # every process reads the reservations again
    _term_to_stripe()
    return reservation


@transaction.atomic
def reservation_order(
    *,
    tenant: Tenant,
    gpu_model: GpuModel,
    hall: Hall,
    gpus: int,
    starts_at: datetime,
    ends_at: datetime,
    actor: Actor,
    now: datetime | None = None,
) -> Reservation:
    """A tenant orders a reservation itself, within limits (docs/capacity.md, "Ordering one"): a term of at least
    the shortest sold (``billing.domain.commitments.TERM_DISCOUNTS``) and at most ``ORDER_MAX_DAYS``, priced at the
    on-demand price of a whole GPU in the hall's region now less its term's discount, and at most
    ``LADDER_RESERVATION_ORDER_MAX_GPUS`` GPUs reserved at once by the tenant over the term (every reservation it
    holds counts). Then as ``reservation_create``, whose refusals stand.

    Refused 422 for a term not sold this way (``ends_at``), 409 ``reservation_limit`` over the limit (``gpus``), 409
    ``not_priced`` where whole GPUs of the model have no on-demand price in the region."""
    now = now or timezone.now()
    lock_tenant(tenant.pk)  # one order at a time per tenant: the limit holds
    days = (ends_at - starts_at) / timedelta(days=1)
    discount = term_discount(days)
    if discount is None or days > ORDER_MAX_DAYS:
        shortest = TERM_DISCOUNTS[0][0]
        raise Invalid(
            "validation_error",
            f"A reservation you order lasts {shortest} to {ORDER_MAX_DAYS} days; ask us for another term.",
            field="ends_at",
        )
    held = (
        Reservation.objects.filter(
            tenant=tenant, cancelled_at=None, starts_at__lt=ends_at, ends_at__gt=starts_at
        ).aggregate(total=Sum("gpus"))["total"]
        or 0
    )
    limit = settings.LADDER_RESERVATION_ORDER_MAX_GPUS
    if held + gpus > limit:
        raise Conflict(
            "reservation_limit",
            f"You would hold {held + gpus} GPUs reserved over that term, over the {limit} you may order yourself "
            f"({held} held). Order fewer, or ask us for a larger reservation.",
            field="gpus",
            extra={"limit_gpus": limit, "held_gpus": held},
        )
    on_demand = reservation_base(price_index(now=now), gpu_model.name, hall.region.code)
    if on_demand is None or on_demand <= 0:
        code = sku_code(rung=PRICED_AS, mig_profile=None, gpu_model=gpu_model.name, region=hall.region.code)
        raise Conflict(
            "not_priced", f"{code} has no on-demand price to reserve {gpu_model.name} GPUs at.", field="hall"
        )
    return reservation_create(
        tenant=tenant,
        gpu_model=gpu_model,
        hall=hall,
        gpus=gpus,
        starts_at=starts_at,
        ends_at=ends_at,
        price_per_gpu_hour=discounted(on_demand, Decimal(discount)),
        actor=actor,
        now=now,
    )


def _term_to_stripe() -> None:
    """After commit, bring reservations' terms to Stripe at once (a term begun now opens its subscription; one
    ended early is credited), rather than at the next billing push."""
    if stripe_enabled():
        enqueue(billing_tasks.stripe_reservations_sync, best_effort=True)


@transaction.atomic
def reservation_end(*, reservation: Reservation, actor: Actor, now: datetime | None = None) -> Reservation:
    """End a reservation early (an operator's decision): its room is no longer kept and its term is billed up to
    now. Its reserved work runs on (and is metered on demand when it is placed again). Ending it twice is harmless."""
    now = now or timezone.now()
    if reservation.cancelled_at is not None or reservation.ends_at <= now:
        return reservation
    Reservation.objects.filter(pk=reservation.pk).update(cancelled_at=max(now, reservation.starts_at))
    reservation.refresh_from_db()
    reserved_work_released(reservation=reservation, at=reservation.ends, actor=actor)
    audit_record(
        actor=actor,
        action="reservation.ended",
        target_type="reservation",
        target_id=reservation.pk,
        tenant=reservation.tenant,
        data={"ended_at": reservation.ends.isoformat(), "ends_at": reservation.ends_at.isoformat()},
    )
    journal_fleet_changed()
    _term_to_stripe()
    return reservation


def reserved_work_released(*, reservation: Reservation, at: datetime, actor: Actor) -> int:
    """The reservation's term is over (ended early, or at its end): its reserved work still holding devices runs on,
    on demand from ``at``. A running allocation's usage is cut there: metered on its reserved SKU (at nothing, the term
    paid for it) before, on its on-demand SKU after. Returns how many moved."""
    moved = 0
    live = Allocation.objects.filter(reservation=reservation, state__in=HOLDS_DEVICES).select_related("tenant")
    for allocation in live:
        Allocation.objects.filter(pk=allocation.pk).update(capacity_class=DEFAULT_CLASS.value, reservation=None)
        allocation.refresh_from_db()
        if allocation.state == AllocationState.RUNNING:
            usage_rescale(allocation=allocation, at=max(at, allocation.running_since or at))
        audit_record(
            actor=actor,
            action="allocation.reservation_ended",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={"reservation": reservation.pk, "on_demand_from": at.isoformat()},
        )
        moved += 1
    return moved


def reservations_expire(*, now: datetime, actor: Actor) -> int:
    """Beat: move the reserved work of every reservation whose term has ended to on-demand (``reserved_work_released``);
    returns how many allocations moved. The fleet is read again when any did."""
    moved = 0
    ended = Reservation.objects.filter(ends_at__lte=now, allocations__state__in=HOLDS_DEVICES).distinct()
    for reservation in ended.select_related("tenant"):
        with transaction.atomic():
            moved += reserved_work_released(reservation=reservation, at=reservation.ends, actor=actor)
    if moved:
        journal_fleet_changed()
    return moved
