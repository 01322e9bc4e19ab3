"""Capacity classes in the database (docs/capacity.md): the reservations tenants hold, and every preemption of spot
work with what it cost.

A ``Reservation`` keeps whole GPUs of one pool (GPU model x hall) for one tenant from ``starts_at`` to ``ends_at``;
the fleet cache loads the ones in force into the engine (``provisioning.domain.placement.state.Reservation``). An
``AllocationPreemption`` is written by the placement that preempted the allocation, in its transaction.
"""

from __future__ import annotations

from datetime import datetime

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from tenancy.models import TenantOwned


class Reservation(TenantOwned):
    """Whole GPUs of one GPU model in one hall kept for the tenant over a term, billed for the whole term."""

    gpu_model = models.ForeignKey("provisioning.GpuModel", on_delete=models.PROTECT, related_name="reservations")
    hall = models.ForeignKey("provisioning.Hall", on_delete=models.PROTECT, related_name="reservations")
    gpus = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    # What the tenant committed to pay per GPU-hour of the term, used or not (billed per month, in advance).
    price_per_gpu_hour = models.DecimalField(max_digits=16, decimal_places=6)
    currency = models.CharField(max_length=3, default="usd")
    created_at = models.DateTimeField(default=timezone.now)
    cancelled_at = models.DateTimeField(null=True, blank=True, help_text="Ended early by an operator.")
    # Its term in Stripe (billing.services.stripe_reservations): a subscription to a licensed monthly price, opened
    # when the term begins; cancelled with a prorated credit when the term is ended early (``stripe_closed_at``).
    stripe_subscription_id = models.CharField(max_length=255, blank=True, default="")
    stripe_closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["tenant", "ends_at"])]
        constraints = [models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="reservation_term")]

    def __str__(self) -> str:
        return f"{self.gpus} GPUs in hall {self.hall_id} ({self.starts_at:%Y-%m-%d} to {self.ends_at:%Y-%m-%d})"

    @property
    def ends(self) -> datetime:
        """When its term ends: its end, or the moment it was ended early."""
        return min(self.ends_at, self.cancelled_at) if self.cancelled_at else self.ends_at


class AllocationPreemption(TenantOwned):
    """Spot work taken back: when its notice was given and until when it had to save, the checkpoint it went back
    to, the work lost since (goodput not recovered), what took its place, and whether it was requeued."""

    allocation = models.ForeignKey("provisioning.Allocation", on_delete=models.CASCADE, related_name="preemptions")
    noticed_at = models.DateTimeField(help_text="The notice: its usage stopped here.")
    deadline = models.DateTimeField(help_text="Killed if still running then (the notice period later).")
    checkpoint_at = models.DateTimeField(null=True, blank=True, help_text="Its last checkpoint at the notice.")
    lost_ms = models.BigIntegerField(default=0, help_text="noticed_at less its last checkpoint (or its start).")
    by_allocation = models.ForeignKey(
        "provisioning.Allocation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    requeued = models.BooleanField(default=False)
    resumed_at = models.DateTimeField(null=True, blank=True, help_text="When the requeued work was placed again.")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["tenant", "noticed_at"])]

    def __str__(self) -> str:
        return f"{self.allocation_id} preempted at {self.noticed_at:%Y-%m-%dT%H:%M:%S}"
