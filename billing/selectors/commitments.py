"""Reservations as finance and their tenants read them (docs/capacity.md, "Reservations"): each one's use (the GPUs
its reserved work holds, the GPU-time it used against the GPU-time committed), and the report of every reservation
over a period: what its term bills in the period, how much of it was used, and the revenue still locked in."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from billing.domain.commitments import Commitment, billed_milli, committed_milli, months_met, utilisation
from billing.domain.focus import Tenant as FocusTenant
from billing.domain.focus_commitments import CommitmentMonth
from billing.domain.metering import from_ms, to_ms
from billing.domain.pricing import amount
from billing.models import UsageInterval
from provisioning.domain.states import HOLDS_DEVICES
from provisioning.models import Allocation, Reservation


@dataclass(frozen=True)
class ReservationUse:
    """A reservation's use so far: GPUs its reserved work holds now, and GPU-time used against GPU-time committed
    since its start (milli-unit-seconds, as the ledger's)."""

    in_use_gpus: Decimal
    used_milli: int
    committed_milli: int

    @property
    def utilisation(self) -> float | None:
        return utilisation(self.used_milli, self.committed_milli)


def reservation_use(reservation: Reservation, *, now: datetime) -> ReservationUse:
    """What the reservation's reserved work holds now and has used of it since its start."""
    live = Allocation.objects.filter(reservation=reservation, state__in=HOLDS_DEVICES)
    held = live.aggregate(total=Sum("quota_milli"))["total"] or 0
    term = _term(reservation)
    end = min(to_ms(now), term.ends_ms)
    return ReservationUse(
        in_use_gpus=Decimal(held) / 1000,
        used_milli=_used_milli(reservation, term.starts_ms, end),
        committed_milli=committed_milli(term, term.starts_ms, end),
    )


def _term(reservation: Reservation) -> Commitment:
    return Commitment(reservation.pk, reservation.gpus, to_ms(reservation.starts_at), to_ms(reservation.ends))


def _used_milli(reservation: Reservation, start_ms: int, end_ms: int) -> int:
    """The GPU-time its reserved work ran inside ``[start_ms, end_ms)``, in milli-unit-seconds (open usage counted
    to ``end_ms``)."""
    used = 0
    for units, start, stop in UsageInterval.objects.filter(allocation__reservation=reservation).values_list(
        "units_milli", "start_ms", "end_ms"
    ):
        used += units * max(0, min(stop if stop is not None else end_ms, end_ms) - max(start, start_ms)) // 1000
    return used


@dataclass(frozen=True)
class ReservationPeriod:
    """One reservation over a period: its term's GPU-time and charge in the period, what its work used of it, and
    what its term bills after ``now`` (revenue locked in)."""

    reservation: Reservation
    committed_milli: int
    used_milli: int
    billed: Decimal
    locked_in: Decimal

    @property
    def utilisation(self) -> float | None:
        return utilisation(self.used_milli, self.committed_milli)


def reservations_report(*, start: datetime, end: datetime, now: datetime) -> list[ReservationPeriod]:
    """Every reservation whose term meets ``[start, end)``: finance's view of what reservations bill, how much of
    them is used (use counted up to ``now`` within the period) and the revenue their terms still lock in after
    ``now``. Exact amounts (invoices round per line)."""
    rows = []
    found = Reservation.objects.filter(starts_at__lt=end, ends_at__gt=start).select_related(
        "tenant", "gpu_model", "hall"
    )
    for reservation in found.order_by("pk"):
        term = _term(reservation)
        first, last = to_ms(start), to_ms(end)
        committed = committed_milli(term, first, last)
        if not committed:
            continue  # ended early, before the period
        price = reservation.price_per_gpu_hour
        rows.append(
            ReservationPeriod(
                reservation=reservation,
                committed_milli=committed,
                used_milli=_used_milli(reservation, first, min(last, to_ms(now))),
                billed=amount(billed_milli(term, first, last), price),
                locked_in=amount(billed_milli(term, to_ms(now), term.ends_ms), price),
            )
        )
    return rows


def commitment_months(*, first_ms: int, stop_ms: int, tenant_id: int | None, now: datetime) -> list[CommitmentMonth]:
    """Each reservation's months for a FOCUS export of ``[first_ms, stop_ms)`` (``billing.domain.focus_commitments``):
    a month whose part of the term begins in the range (it is billed then, in advance), with its use up to the
    range's end or ``now``, whichever is first. In tenant, reservation and month order."""
    found = Reservation.objects.filter(starts_at__lt=from_ms(stop_ms), ends_at__gt=from_ms(first_ms))
    if tenant_id is not None:
        found = found.filter(tenant_id=tenant_id)
    months = []
    for reservation in found.select_related("tenant", "gpu_model", "hall__region").order_by("tenant_id", "pk"):
        term = _term(reservation)
        tenant = reservation.tenant
        for month_start, month_end in months_met(term.starts_ms, term.ends_ms):
            start, end = max(month_start, term.starts_ms), min(month_end, term.ends_ms)
            if not first_ms <= start < stop_ms:
                continue
            months.append(
                CommitmentMonth(
                    tenant=FocusTenant(tenant.pk, tenant.slug, tenant.name),
                    reservation=reservation.pk,
                    gpus=reservation.gpus,
                    gpu_model=reservation.gpu_model.name,
                    hall=reservation.hall.code,
                    region_code=reservation.hall.region.code,
                    region_name=reservation.hall.region.name,
                    currency=reservation.currency,
                    price_per_hour=reservation.price_per_gpu_hour,
                    term_start_ms=term.starts_ms,
                    term_end_ms=term.ends_ms,
                    start_ms=start,
                    end_ms=end,
                    billed_milli=billed_milli(term, start, end),
                    committed_milli=committed_milli(term, start, end),
                    used_milli=_used_milli(reservation, start, min(end, stop_ms, to_ms(now))),
                )
            )
    return months
