"""The price book, the usage ledger (intervals and hourly rollups, which are also the Stripe outbox), the Stripe
mirror (accounts, invoices, processed webhook events) and budgets.

Time in the ledger is integer epoch milliseconds and quantities integer milli-unit-seconds
(``billing.domain.metering``);
money is ``Decimal`` (``billing.domain.pricing``). Rows change only through ``billing.services.accounts``.
"""

from __future__ import annotations

import re
from datetime import UTC
from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from billing.domain.metering import from_ms
from billing.domain.pricing import HOST_UNITS, PRICE_PLACES, per_gb_month
from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass
from provisioning.domain.rungs import BillingUnit, Rung, rung_facts
from provisioning.models import Allocation, GpuModel, Hall, Region, Volume, VolumeSnapshot
from tenancy.models import Tenant, TenantOwned

currency_validator = RegexValidator(r"^[a-z]{3}$", "A currency is a three-letter ISO code in lower case (usd, eur).")


class Unit(models.TextChoices):
    GPU = "gpu", "whole GPU"
    MIG = "mig", "MIG slice"
    NODE = "node", "node (bare metal)"
    GB = "gb", "GB of storage"
    VCPU = "vcpu", "vCPU beyond the bundle"
    MEMORY = "memory", "GiB of memory beyond the bundle"


class StorageKind(models.TextChoices):
    """What a storage SKU sells: a volume of a kind (``provisioning.domain.volumes.VolumeKind``) or snapshots."""

    FILESYSTEM = "filesystem"
    BLOCK = "block"
    SNAPSHOT = "snapshot"


class Sku(models.Model):
    """What is sold: compute (rung x GPU model x unit: a whole GPU, a MIG profile, a node; x region x capacity
    class: on demand, spot, reserved), storage (storage kind x region, by the GB: ``unit`` gb, no rung nor GPU
    model, on demand) or a host's vCPUs and memory beyond the bundle (``HOST_UNITS`` x region: no rung, GPU model
    nor storage kind, on demand)."""

    code = models.CharField(max_length=120, unique=True, editable=False)
    rung = models.CharField(max_length=16, choices=[(r.value, r.value) for r in Rung], blank=True)
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, null=True, blank=True, related_name="skus")
    unit = models.CharField(max_length=8, choices=Unit.choices)
    mig_profile = models.CharField(max_length=32, blank=True, help_text="Only for the MIG unit, e.g. 3g.40gb.")
    storage_kind = models.CharField(max_length=16, choices=StorageKind.choices, blank=True)
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="skus")
    capacity_class = models.CharField(
        max_length=16,
        choices=[(c.value, c.value) for c in CapacityClass],
        default=DEFAULT_CLASS.value,
        db_default=DEFAULT_CLASS.value,  # rows written by plain SQL (bulk loads, benchmarks) are on demand too
    )
    currency = models.CharField(max_length=3, default="usd", validators=[currency_validator])
    stripe_product_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["code"]
        constraints = [
            models.UniqueConstraint(
                fields=["rung", "gpu_model", "unit", "mig_profile", "region", "capacity_class"], name="sku_unique"
            ),
            models.CheckConstraint(
                condition=Q(unit="mig", mig_profile__gt="") | (~Q(unit="mig") & Q(mig_profile="")),
                name="sku_mig_profile_only_for_mig",
            ),
            # Storage is sold by the GB with a storage kind and nothing of compute; a host's vCPUs and memory with
            # neither; compute the other way round.
            models.CheckConstraint(
                condition=Q(unit="gb", storage_kind__gt="", rung="", gpu_model__isnull=True)
                | Q(unit__in=HOST_UNITS, storage_kind="", rung="", gpu_model__isnull=True, capacity_class="on_demand")
                | (~Q(unit__in=("gb", *HOST_UNITS)) & Q(storage_kind="", rung__gt="", gpu_model__isnull=False)),
                name="sku_storage_host_or_compute",
            ),
            models.UniqueConstraint(
                fields=["storage_kind", "region"], condition=Q(unit="gb"), name="sku_storage_unique"
            ),
            models.UniqueConstraint(
                fields=["unit", "region"], condition=Q(unit__in=HOST_UNITS), name="sku_host_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.code

    def save(self, *args: object, **kwargs: object) -> None:
        if self.is_host:
            self.code = self.host_code(self.unit, self.region.code)
        elif self.is_storage or self.gpu_model is None:  # the constraint refuses a compute SKU without one
            self.code = self.storage_code(self.storage_kind, self.region.code)
        else:
            self.code = self.make_code(
                self.rung, self.gpu_model.name, self.unit, self.mig_profile, self.region.code, self.capacity_class
            )
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def is_storage(self) -> bool:
        return self.unit == Unit.GB

    @property
    def is_host(self) -> bool:
        return self.unit in HOST_UNITS

    @staticmethod
    def storage_code(storage_kind: str, region: str) -> str:
        return f"storage/{storage_kind}/{region}"

    @staticmethod
    def host_code(unit: str, region: str) -> str:
        return f"host/{unit}/{region}"

    @staticmethod
    def unit_for(rung: str, mig_profile: str | None) -> tuple[str, str]:
        """The unit a rung sells a shape in, and its MIG profile: a rung billed by the node (the table of rungs says
        which) by the node, a MIG slice by its profile, everything else (whole GPUs, soft shares of one) by the GPU.
        The one rule for both the meter (``billing.services.ledger.meters_of``) and the price asked at placement
        (``billing.selectors.priced_pools``)."""
        if rung_facts(rung).unit is BillingUnit.NODE_SECONDS:
            return Unit.NODE, ""
        if mig_profile:
            return Unit.MIG, mig_profile
        return Unit.GPU, ""

    @staticmethod
    def make_code(
        rung: str, gpu_model: str, unit: str, mig_profile: str, region: str, capacity_class: str = DEFAULT_CLASS
    ) -> str:
        """``job/H100-SXM-80GB/gpu/eu-west``; another class than on demand after it: ``.../eu-west/spot``."""
        what = f"mig-{mig_profile}" if unit == Unit.MIG else unit
        code = f"{rung}/{gpu_model}/{what}/{region}"
        return code if capacity_class == DEFAULT_CLASS else f"{code}/{capacity_class}"

    @property
    def event_name(self) -> str:
        """The stem of its Stripe meters' event names (stable for the SKU's life)."""
        return "ladder." + re.sub(r"[^a-z0-9._-]", "_", self.code.lower().replace("/", "."))[:78]


class SkuPrice(models.Model):
    """A SKU's price from ``effective_from`` until the next price; usage is split at the change.

    Each price has its own Stripe meter and metered Price: Stripe bills a meter's whole period at the price of
    the subscription item on it, so usage at two prices must reach Stripe on two meters to be billed exactly."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="prices")
    effective_from = models.DateTimeField()
    # Ten places (``billing.domain.pricing.PRICE_PLACES``): a storage price quoted per GB-month is kept per GB-hour,
    # and six places would move a 1 TB volume's month by up to 36 cents.
    unit_price_per_hour = models.DecimalField(
        max_digits=16, decimal_places=PRICE_PLACES, validators=[MinValueValidator(Decimal(0))]
    )
    # A spot SKU's price is the on-demand price less the discount the operator set for it (``spot_price_set``).
    discount_pct = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(100))],
        help_text="Spot: the discount off the on-demand price this price was made with, in percent.",
    )
    stripe_meter_id = models.CharField(max_length=64, blank=True)
    stripe_price_id = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["sku", "effective_from"]
        constraints = [models.UniqueConstraint(fields=["sku", "effective_from"], name="sku_price_unique")]

    def __str__(self) -> str:
        return f"{self.sku.code} {self.unit_price_per_hour}/h from {self.effective_from:%Y-%m-%d %H:%M}"

    @property
    def per_gb_month(self) -> Decimal:
        """A storage price as it is quoted: per GB-month (``billing.domain.pricing.per_gb_month``)."""
        return per_gb_month(self.unit_price_per_hour)

    @property
    def event_name(self) -> str:
        """Its Stripe meter's event name: the SKU's stem and the price's start (at most 100 characters, and the
        same in every environment that shares a Stripe account)."""
        return f"{self.sku.event_name}.{self.effective_from.astimezone(UTC):%Y%m%dT%H%M%S}"


class CostBasis(models.Model):
    """What one GPU-hour of a GPU model in a hall costs the operator, from ``effective_from`` until the next entry:
    capex amortisation, power, space and network. Added, never edited (a later entry supersedes it); finance's
    margin prices allocated, idle and stranded GPU-hours with it (docs/finance.md)."""

    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="+")
    hall = models.ForeignKey(Hall, on_delete=models.PROTECT, related_name="+")
    effective_from = models.DateTimeField()
    currency = models.CharField(max_length=3, default="usd", validators=[currency_validator])
    capex_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6, validators=[MinValueValidator(0)])
    power_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6, validators=[MinValueValidator(0)])
    space_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6, validators=[MinValueValidator(0)])
    network_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6, validators=[MinValueValidator(0)])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["gpu_model", "hall", "effective_from"]
        constraints = [
            models.UniqueConstraint(fields=["gpu_model", "hall", "effective_from"], name="cost_basis_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_model_id}/{self.hall_id} {self.per_gpu_hour}/h from {self.effective_from:%Y-%m-%d}"

    @property
    def per_gpu_hour(self) -> Decimal:
        return self.capex_per_gpu_hour + self.power_per_gpu_hour + self.space_per_gpu_hour + self.network_per_gpu_hour


class StorageCostBasis(models.Model):
    """What one provisioned GB of a storage kind in a region costs the operator per storage month
    (``provisioning.domain.volumes.HOURS_PER_MONTH`` hours), from ``effective_from`` until the next entry: the
    disks and their replicas, the servers, power, space and network behind it. Added, never edited; finance's margin
    prices provisioned GB-hours with it (docs/finance.md)."""

    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="+")
    storage_kind = models.CharField(max_length=16, choices=StorageKind.choices)
    effective_from = models.DateTimeField()
    currency = models.CharField(max_length=3, default="usd", validators=[currency_validator])
    cost_per_gb_month = models.DecimalField(max_digits=12, decimal_places=6, validators=[MinValueValidator(0)])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["region", "storage_kind", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["region", "storage_kind", "effective_from"], name="storage_cost_basis_unique"
            ),
        ]

    def __str__(self) -> str:
        since = f"{self.effective_from:%Y-%m-%d}"
        return f"{self.storage_kind}/{self.region_id} {self.cost_per_gb_month}/GB-month from {since}"


class BillingAccount(models.Model):
    """A tenant's billing side: its Stripe customer and subscription, payment standing and monthly budget."""

    tenant = models.OneToOneField(Tenant, on_delete=models.PROTECT, primary_key=True, related_name="billing")
    currency = models.CharField(max_length=3, default="usd", validators=[currency_validator])
    stripe_customer_id = models.CharField(max_length=64, blank=True)
    stripe_subscription_id = models.CharField(max_length=64, blank=True)
    subscription_status = models.CharField(max_length=32, blank=True)
    subscribed_prices = models.JSONField(default=list, blank=True, help_text="Stripe price ids on the subscriptions.")
    # Stripe allows 20 items per subscription, so a tenant billed at more prices has further subscriptions (shards)
    # on the same billing cycle; this says which one bills each price (docs/billing.md, "Catalog without a ceiling").
    subscription_items = models.JSONField(
        default=dict, blank=True, help_text="Stripe price id -> the subscription whose item bills it."
    )
    payment_failed_at = models.DateTimeField(null=True, blank=True)
    budget_monthly = models.DecimalField(
        max_digits=14, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(Decimal("0.01"))]
    )
    budget_hard_stop = models.BooleanField(default=False)
    # The card or account Stripe charges: set when a Checkout session in setup mode completes. Only what a person
    # recognises is kept here ("visa •••• 4242"); Stripe holds the rest.
    payment_method_id = models.CharField(max_length=64, blank=True)
    payment_method_summary = models.CharField(max_length=100, blank=True)
    payment_method_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"billing of {self.tenant_id}"


class UsageInterval(TenantOwned):
    """A piece of running time of one allocation on one SKU (its GPUs; its vCPUs or memory beyond the bundle), or of
    provisioned storage of one volume or snapshot (exactly one of the three is set). ``end_ms`` null: still open (at
    most one per volume or snapshot, one per SKU of an allocation). Pieces never cross an hour or a price change, so
    each has one window and one ``price`` (the one in effect at its start; null when the SKU had none). ``batch`` is
    set when a rollup counted it."""

    # The hottest table of the ledger: every index costs a write per piece, so the foreign keys have none of their
    # own; the queries go through the composite and partial indexes below (tenant + window, the open interval of
    # an allocation, the uncounted pieces by window).
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="usageintervals", db_index=False)
    allocation = models.ForeignKey(
        Allocation, on_delete=models.PROTECT, null=True, related_name="usage", db_index=False
    )
    volume = models.ForeignKey(Volume, on_delete=models.PROTECT, null=True, related_name="usage", db_index=False)
    snapshot = models.ForeignKey(
        VolumeSnapshot, on_delete=models.PROTECT, null=True, related_name="usage", db_index=False
    )
    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="+", db_index=False)
    price = models.ForeignKey(SkuPrice, on_delete=models.PROTECT, null=True, related_name="+", db_index=False)
    units_milli = models.PositiveIntegerField(
        help_text="How much of the unit: 1000 per GPU, slice, node, GB, vCPU or GiB."
    )
    start_ms = models.BigIntegerField()
    end_ms = models.BigIntegerField(null=True)
    window_ms = models.BigIntegerField(help_text="Start of the hourly window the piece belongs to.")
    quantity_milli = models.BigIntegerField(null=True)
    batch = models.BigIntegerField(null=True, help_text="The rollup run that counted it.")

    class Meta:
        constraints = [
            # An allocation's GPUs, and its vCPUs and memory beyond the bundle, each on a SKU of its own.
            models.UniqueConstraint(
                fields=["allocation", "sku"], condition=Q(end_ms=None), name="one_open_interval_per_sku"
            ),
            models.UniqueConstraint(fields=["volume"], condition=Q(end_ms=None), name="one_open_volume_interval"),
            models.UniqueConstraint(fields=["snapshot"], condition=Q(end_ms=None), name="one_open_snapshot_interval"),
            models.CheckConstraint(
                condition=Q(allocation__isnull=False, volume=None, snapshot=None)
                | Q(allocation=None, volume__isnull=False, snapshot=None)
                | Q(allocation=None, volume=None, snapshot__isnull=False),
                name="usage_of_one_thing",
            ),
            models.CheckConstraint(condition=Q(end_ms=None) | Q(end_ms__gte=models.F("start_ms")), name="ends_after"),
        ]
        indexes = [
            models.Index(fields=["window_ms"], condition=Q(batch=None, end_ms__isnull=False), name="usage_unrolled"),
            models.Index(fields=["tenant", "window_ms"], name="usage_by_tenant"),
            # The detail export's order and every column it reads, the resource being the allocation, volume or
            # snapshot: the database walks it without sorting or reading the table (billing.selectors.exports).
            models.Index(
                fields=[
                    "tenant",
                    "sku",
                    "window_ms",
                    "allocation",
                    "volume",
                    "snapshot",
                    "price",
                    "batch",
                    "quantity_milli",
                ],
                condition=Q(batch__isnull=False),
                name="usage_export",
            ),
        ]


class PushState(models.TextChoices):
    PENDING = "pending"  # waiting for the pusher
    SENDING = "sending"  # claimed by a pusher until ``lease_until``
    SENT = "sent"  # Stripe has it (or said it already had it)
    NOTHING = "nothing"  # no whole unit-second to send; its remainder is carried to the next rollup
    FAILED = "failed"  # Stripe refused it: a person must look (``push_error``)
    STALE = "stale"  # older than Stripe accepts (35 days): a person must bill it by hand


class UsageRollup(TenantOwned):
    """One tenant x SKU x price x hourly window (two prices in an hour only when the price changed in it),
    immutable once made; ``seq`` > 0 is a late adjustment for a window that had already closed. It is also the
    outbox row for its one Stripe meter event."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="+")
    price = models.ForeignKey(SkuPrice, on_delete=models.PROTECT, null=True, related_name="+")
    window_ms = models.BigIntegerField()
    seq = models.PositiveIntegerField(default=0)
    batch = models.BigIntegerField()
    quantity_milli = models.BigIntegerField()
    amount = models.DecimalField(max_digits=24, decimal_places=10, help_text="Exact; invoices round per line.")
    currency = models.CharField(max_length=3)
    closed_at = models.DateTimeField(default=timezone.now)
    meter_value = models.BigIntegerField(help_text="Whole unit-seconds sent to Stripe (remainders carried).")
    push_state = models.CharField(max_length=8, choices=PushState.choices, default=PushState.PENDING)
    push_attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True, help_text="The claim of the pusher holding it.")
    uncertain_since = models.DateTimeField(
        null=True, blank=True, help_text="First send whose outcome is unknown (a crash, a timeout, a 500)."
    )
    pushed_at = models.DateTimeField(null=True, blank=True)
    push_error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "sku", "price", "window_ms", "seq"], name="rollup_unique"),
        ]
        indexes = [
            models.Index(
                fields=["window_ms", "id"], condition=Q(push_state__in=["pending", "sending"]), name="rollup_outbox"
            ),
            # The summary export's order and every column it reads (and the detail export's late adjustments):
            # the database walks it without sorting or reading the table (billing.selectors.exports).
            models.Index(
                fields=["tenant", "sku", "window_ms", "price", "seq", "quantity_milli", "closed_at", "batch"],
                name="rollup_export",
            ),
        ]

    @property
    def identifier(self) -> str:
        """The meter event's identifier: the same rollup always sends the same one, so Stripe drops repeats."""
        stamp = from_ms(self.window_ms).strftime("%Y%m%dT%H")
        late = f":late-{self.seq}" if self.seq else ""
        return f"ladder:t{self.tenant_id}:s{self.sku_id}:p{self.price_id or 0}:{stamp}{late}"


class MeterTotal(TenantOwned):
    """Running ledger total per tenant x SKU, from which each rollup's whole-unit meter value is derived."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="+")
    quantity_milli = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "sku"], name="meter_total_unique")]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.sku_id}: {self.quantity_milli}"


class MeteringLock(models.Model):
    """The one row whose lock serializes window closing; it remembers how far open intervals were cut."""

    cut_through_ms = models.BigIntegerField(null=True)
    last_batch = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"cut through {self.cut_through_ms}, batch {self.last_batch}"


class Invoice(TenantOwned):
    """Stripe's invoices as its webhooks told us (the mirror)."""

    stripe_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=32)
    currency = models.CharField(max_length=3)
    period_start = models.DateTimeField(null=True)
    period_end = models.DateTimeField(null=True)
    subtotal = models.BigIntegerField(help_text="Minor units.")
    total = models.BigIntegerField(help_text="Minor units.")
    amount_due = models.BigIntegerField(default=0)
    amount_paid = models.BigIntegerField(default=0)
    lines = models.JSONField(default=list)
    hosted_invoice_url = models.URLField(max_length=500, blank=True)
    payment_failed = models.BooleanField(default=False, help_text="Its last payment attempt failed.")
    stripe_created = models.DateTimeField(null=True)
    event_created = models.DateTimeField(null=True, help_text="The newest Stripe event applied to it.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-period_start", "-id"]


class StripeEvent(models.Model):
    """Webhook events already processed (Stripe may deliver one more than once)."""

    id = models.CharField(max_length=64, primary_key=True)
    type = models.CharField(max_length=64)
    received_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.id} ({self.type})"


class Notification(TenantOwned):
    """What the product told a tenant (budget alerts, notices before a stop)."""

    kind = models.CharField(max_length=32)
    subject = models.CharField(max_length=200)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    emailed_to = models.JSONField(default=list)

    class Meta:
        ordering = ["-created_at", "-id"]


class BudgetAlert(TenantOwned):
    """A budget threshold crossed in a month: each is alerted once."""

    month = models.DateField(help_text="First day of the month.")
    threshold = models.PositiveSmallIntegerField()
    spend = models.DecimalField(max_digits=16, decimal_places=2)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "month", "threshold"], name="budget_alert_once")]


class ReconciliationState(models.TextChoices):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"  # Stripe could not be read, or the run broke: ``error`` says why


class ReconciliationRun(models.Model):
    """A month's reconciliation as it was computed (``billing.domain.reconcile``): started by finance staff (POST) or by
    the monthly beat once the month's invoices are final, run by a task, read by GETs (which never call Stripe)."""

    month = models.CharField(max_length=7, help_text="YYYY-MM (UTC).")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    state = models.CharField(max_length=8, choices=ReconciliationState.choices, default=ReconciliationState.RUNNING)
    requested_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    mode = models.CharField(max_length=16, blank=True, help_text="stripe or ledger_only.")
    is_clean = models.BooleanField(null=True, help_text="No unexplained difference (null until done).")
    unexplained = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["month", "tenant"], condition=Q(state="running"), name="one_running_reconciliation"
            ),
        ]

    def __str__(self) -> str:
        return f"reconciliation of {self.month} ({self.state})"


class ExportState(models.TextChoices):
    PENDING = "pending"  # queued
    RUNNING = "running"  # a worker is writing it
    DONE = "done"  # written and signed: ``path``, ``rows``, ``sha256``, ``signature``
    FAILED = "failed"  # ``error`` says why


class ExportJob(models.Model):
    """A FOCUS export of a range too large to stream in one request: written to ``LADDER_EXPORT_DIR`` by a task
    and signed with the audit signing key. Staff's (finance), not a tenant's: ``tenant`` is the one exported, or
    null for all."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    date_from = models.DateField()
    date_to = models.DateField(help_text="Inclusive: the last UTC day exported.")
    detail = models.BooleanField(default=False)
    file_format = models.CharField(max_length=8, choices=[("csv", "csv"), ("parquet", "parquet")])
    state = models.CharField(max_length=8, choices=ExportState.choices, default=ExportState.PENDING)
    requested_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    rows = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    path = models.CharField(max_length=500, blank=True)
    signature = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"export {self.pk} {self.date_from}..{self.date_to} {self.file_format} ({self.state})"
