"""Tenants, their members and API keys.

``TenantOwned`` is the base of every model that belongs to one tenant. The API reaches such rows only through
``api.base.TenantScopedViewSet``, whose queryset is filtered by the caller's tenant; selectors take ``tenant=``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from tenancy.domain.roles import TenantRole


class TenantState(models.TextChoices):
    ACTIVE = "active"
    SUSPENDED = "suspended"
    CLOSING = "closing"
    CLOSED = "closed"


# A suspended tenant still manages what it has (stops work, sets a budget); buying more is refused by billing's
# admission check (402 ``payment_required``). A closing or closed tenant only reads.
WRITABLE = frozenset({TenantState.ACTIVE, TenantState.SUSPENDED})


class Tenant(models.Model):
    """A customer. Its residency and isolation settings are the one source of truth for placement (and, later,
    for where its data may live): ``tenancy.selectors.tenant_policy`` turns them into the engine's policy."""

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=200)
    state = models.CharField(max_length=16, choices=TenantState.choices, default=TenantState.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    # Residency: null lists mean "anywhere". A sovereign tenant names exactly one jurisdiction and uses only
    # halls fenced for it.
    residency_regions = models.JSONField(null=True, blank=True)
    residency_jurisdictions = models.JSONField(null=True, blank=True)
    sovereign = models.BooleanField(default=False)
    # Isolation: a dedicated-hardware tenant never shares a GPU with another tenant, not even by MIG.
    dedicated_hardware = models.BooleanField(default=False)
    allow_soft_sharing = models.BooleanField(default=True)  # within the tenant only, always
    # Quota in milli-GPU (a whole GPU is 1000); null: no quota. Operators set it.
    gpu_quota_milli = models.PositiveIntegerField(null=True, blank=True)
    # Storage quota in GB over its volumes (provisioned size, snapshots not counted); null: no quota. Operators set it.
    volume_quota_gb = models.PositiveIntegerField(null=True, blank=True)
    # Calls a minute each of its endpoints takes (the gateway's check, the endpoint's own URL), counted per
    # endpoint; null: LADDER_ENDPOINT_CALLS_PER_MINUTE. Operators set it with the quota.
    endpoint_calls_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # The generation of the key signing its endpoint tokens (tenancy.domain.endpoint_tokens): rotating moves it on.
    endpoint_token_generation = models.PositiveIntegerField(default=1, db_default=1)  # raw inserts (benchmarks) too

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.slug

    @property
    def writable(self) -> bool:
        """May its members change its things (as this object last read its state)? Services ask
        ``tenancy.services.tenant_require_writable``, which reads the state afresh; pages use this to say so."""
        return self.state in WRITABLE


class TenantOwned(models.Model):
    """Base of every tenant-owned model."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="%(class)ss")

    class Meta:
        abstract = True


class Membership(TenantOwned):
    """A user's place in a tenant. A customer user belongs to exactly one tenant; staff to none."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    role = models.CharField(max_length=16, choices=[(r.value, r.value) for r in TenantRole])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.tenant_id}:{self.role}"


class ApiKeyScope(models.TextChoices):
    READ = "read"
    WRITE = "write"


class ApiKey(models.Model):
    """An API key. The secret is shown once as ``ldr_<prefix>_<secret>``; only its SHA-256 is stored.

    ``tenant`` is the owner's tenant at creation (null for staff keys); it scopes listing and revocation.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, null=True, blank=True, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"ldr_{self.prefix}_… ({self.name})"

    def is_usable(self, now: Any = None) -> bool:
        now = now or timezone.now()
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class SshKey(TenantOwned):
    """A public key the tenant registered for SSH access to its work (bare metal, VMs, containers with SSH)."""

    name = models.CharField(max_length=100)
    key_type = models.CharField(max_length=40)
    bits = models.PositiveIntegerField()
    fingerprint = models.CharField(max_length=60, help_text="OpenSSH's SHA256 fingerprint (ssh-keygen -l).")
    public_key = models.TextField(help_text="One line: type, base64 and the comment, if any.")
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="ssh_key_name_unique_per_tenant"),
            models.UniqueConstraint(fields=["tenant", "fingerprint"], name="ssh_key_unique_per_tenant"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint})"
