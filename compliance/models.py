"""Signed checkpoints of the audit chain (the chain itself lives in ``core``), and the data-asset registry with
its keys, retention, legal holds and erasure."""

from django.db import models
from django.utils import timezone

from compliance.domain import retention
from tenancy.models import TenantOwned


class AuditCheckpoint(models.Model):
    """The chain head at ``seq`` (its ``hash``), signed with the audit signing key (Ed25519) at ``at``.

    A checkpoint vouches for every event up to ``seq``: the hash of each commits to all before it. The signature
    (base64) covers ``compliance.domain.verify.checkpoint_payload``; ``key_id`` names the key that made it.
    """

    seq = models.BigIntegerField(unique=True)
    hash = models.CharField(max_length=64)
    at = models.DateTimeField()
    key_id = models.CharField(max_length=16)
    signature = models.CharField(max_length=88)

    class Meta:
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"checkpoint #{self.seq}"


# --- data assets, keys, retention, holds, erasure ----------------------------------------------------------------


class TenantKey(models.Model):
    """A tenant's key, wrapped by a master key (``master_id`` names which). It wraps every data key of the tenant;
    rotation re-wraps it, and account closure shreds it (``wrapped`` emptied) once nothing under it may remain."""

    tenant = models.OneToOneField("tenancy.Tenant", on_delete=models.PROTECT, related_name="data_key")
    master_id = models.CharField(max_length=64)
    wrapped = models.BinaryField(null=True)
    created_at = models.DateTimeField(default=timezone.now)
    rotated_at = models.DateTimeField(null=True, blank=True)
    shredded_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"tenant key of {self.tenant_id} ({self.master_id})"


# The one list of data categories is the pure ``retention.Category``; the models take their choices from it.
CATEGORY_CHOICES = [(c.value, c.name.replace("_", " ").title()) for c in retention.Category]


class AssetState(models.TextChoices):
    LIVE = "live"
    SHREDDING = "shredding"  # the waiting period runs; cancellable; content no longer served
    SHREDDED = "shredded"  # the data key is destroyed: the content is gone for good


class ShredReason(models.TextChoices):
    RETENTION = "retention"
    DELETE = "delete"
    ERASURE = "erasure"
    CLOSURE = "closure"


class DataAsset(TenantOwned):
    """Something the product stores for a tenant: where (region, location), how big, under which data key, made
    from what (``derived_from``), and how far along its deletion is."""

    name = models.CharField(max_length=200)
    category = models.CharField(max_length=32, choices=CATEGORY_CHOICES)
    region = models.ForeignKey("provisioning.Region", on_delete=models.PROTECT, related_name="data_assets")
    size_bytes = models.PositiveBigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    location = models.CharField(max_length=500, blank=True, help_text="Storage URI of the encrypted content.")
    key_id = models.CharField(max_length=32, blank=True, help_text="Fingerprint of the asset's data key.")
    wrapped_key = models.BinaryField(null=True, help_text="The data key wrapped by the tenant key; gone once shredded.")
    derived_from = models.ManyToManyField("self", symmetrical=False, related_name="derivatives", blank=True)
    # A volume's asset: the volume's data key and its governance (retention, holds, erasure, closure). Shredding
    # the asset destroys the key, then the volume (docs/volumes.md, "Encryption and crypto-shredding").
    volume = models.OneToOneField(
        "provisioning.Volume", on_delete=models.PROTECT, null=True, blank=True, related_name="asset"
    )
    state = models.CharField(max_length=16, choices=AssetState.choices, default=AssetState.LIVE)
    shred_reason = models.CharField(max_length=16, choices=ShredReason.choices, blank=True)
    shred_requested_at = models.DateTimeField(null=True, blank=True)
    shred_after = models.DateTimeField(null=True, blank=True, help_text="End of the waiting period.")
    shredded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["tenant", "category", "state", "created_at"]),
            models.Index(fields=["state", "shred_after"]),
        ]

    def __str__(self) -> str:
        return f"{self.category} {self.name} ({self.pk})"

    def facts(self) -> retention.AssetFacts:
        return retention.AssetFacts(
            id=self.pk,
            tenant_id=self.tenant_id,
            category=self.category,
            created_at=self.created_at,
            state=self.state,
            shred_after=self.shred_after,
        )


class RetentionPolicy(TenantOwned):
    """A tenant's own retention for one category; categories without a row keep the product default."""

    category = models.CharField(max_length=32, choices=CATEGORY_CHOICES)
    days = models.PositiveIntegerField(null=True, blank=True)
    zero_retention = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["tenant", "category"]
        constraints = [models.UniqueConstraint(fields=["tenant", "category"], name="retention_policy_once")]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.category}"

    def rule(self) -> retention.Rule:
        return retention.Rule(days=self.days, zero_retention=self.zero_retention)


class HoldState(models.TextChoices):
    ACTIVE = "active"
    RELEASED = "released"


class LegalHold(TenantOwned):
    """A legal hold: while active, nothing it covers is deleted by anyone. ``categories`` empty: every category;
    ``lock_until``: a preservation lock, the hold cannot be released before it."""

    matter = models.CharField(max_length=200)
    reason = models.TextField()
    categories = models.JSONField(default=list)
    created_from = models.DateTimeField(null=True, blank=True)
    created_to = models.DateTimeField(null=True, blank=True)
    lock_until = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=HoldState.choices, default=HoldState.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=150, blank=True)
    release_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["state", "tenant"])]

    def __str__(self) -> str:
        return f"hold {self.pk} ({self.matter})"

    def scope(self) -> retention.HoldScope:
        return retention.HoldScope(
            id=self.pk,
            tenant_id=self.tenant_id,
            categories=frozenset(self.categories),
            created_from=self.created_from,
            created_to=self.created_to,
        )


class ErasureState(models.TextChoices):
    SUSPENDED = "suspended"  # some data is withheld under a legal hold; completes when the hold is released
    COMPLETED = "completed"


class ErasureRequest(TenantOwned):
    """A request to erase data (the tenant's, or a data subject's through compliance). ``scope`` records what was
    asked: asset ids, or categories and a creation date range."""

    scope = models.JSONField(default=dict)
    on_behalf_of = models.CharField(max_length=200, blank=True, help_text="The data subject, when compliance asks.")
    state = models.CharField(max_length=16, choices=ErasureState.choices)
    requested_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"erasure {self.pk} ({self.state})"


class ErasureOutcome(models.TextChoices):
    DELETED = "deleted"  # scheduled for crypto-shredding
    WITHHELD = "withheld"  # preserved under ``hold`` (GDPR Art. 17(3)(e))
    AFFECTED = "affected"  # derived from erased data: retrain needed


class ErasureItem(models.Model):
    request = models.ForeignKey(ErasureRequest, on_delete=models.CASCADE, related_name="items")
    asset = models.ForeignKey(DataAsset, on_delete=models.PROTECT, related_name="erasure_items")
    outcome = models.CharField(max_length=16, choices=ErasureOutcome.choices)
    hold = models.ForeignKey(LegalHold, on_delete=models.PROTECT, null=True, blank=True, related_name="withheld")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["request", "asset"], name="erasure_item_once")]

    def __str__(self) -> str:
        return f"{self.request_id}:{self.asset_id} {self.outcome}"


class ClosureStep(models.TextChoices):
    """Where a closure is (``lifecycle/services/closure.py`` runs the steps)."""

    STOPPING = "stopping"
    INVOICING = "invoicing"
    EXPORTING = "exporting"
    SCHEDULING = "scheduling"
    WAITING = "waiting"  # every step done; the tenant is closed at ``closes_at``
    CLOSED = "closed"


class AccountClosure(TenantOwned):
    """A tenant leaving: recorded before anything else happens, then moved step by step (``step``); what it did,
    and when the tenant becomes ``closed`` (``closes_at``, the end of the waiting period, during which the export
    bundle can be downloaded)."""

    requested_by = models.CharField(max_length=150)
    actor = models.JSONField(default=dict, help_text="Who asked (type, id, label, key prefix): the steps act as them.")
    requested_at = models.DateTimeField(default=timezone.now)
    step = models.CharField(max_length=16, choices=ClosureStep.choices, default=ClosureStep.STOPPING)
    updated_at = models.DateTimeField(default=timezone.now, help_text="When the step last moved or was tried.")
    attempts = models.PositiveIntegerField(default=0, help_text="Runs of steps so far (retries included).")
    last_error = models.CharField(max_length=500, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    allocations_stopped = models.PositiveIntegerField(default=0)
    final_invoice = models.ForeignKey(DataAsset, on_delete=models.PROTECT, null=True, related_name="+")
    export = models.ForeignKey(DataAsset, on_delete=models.PROTECT, null=True, related_name="+")
    report = models.JSONField(default=dict)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"closure of {self.tenant_id}"


class TenantSecret(TenantOwned):
    """A tenant's secret: its current value only, encrypted under a data key of its own that the tenant key wraps
    (``compliance/services/secrets.py``). A new value is a new version under a new data key; the old one is gone.
    Nothing but the provisioning of the tenant's own work ever reads the value back."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    wrapped_key = models.BinaryField()
    ciphertext = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=150)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="secret_name_unique_per_tenant")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class CapturePolicy(TenantOwned):
    """What the product may capture from a tenant's work beyond what the work itself writes. Off unless the tenant
    turns it on; a zero-retention rule for the category still wins (nothing is persisted)."""

    inference_payloads = models.BooleanField(
        default=False, help_text="Keep serverless request and response payloads as inference_payload assets."
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="capture_policy_once")]

    def __str__(self) -> str:
        return f"capture policy of {self.tenant_id}"
