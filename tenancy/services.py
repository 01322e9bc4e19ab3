"""Every write to tenants, members and API keys. Each service owns its transaction and audits its change."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Forbidden, Invalid
from core.sql import Columns
from tenancy.domain import ssh
from tenancy.domain.roles import STAFF_PERMISSIONS, Action, StaffRole, TenantRole, may_assign_role, role_allows
from tenancy.events import tenant_limits_set
from tenancy.gateway_keys import endpoint_tokens_rotate, gateway_key_forget
from tenancy.locks import lock_api_keys, lock_tenant
from tenancy.models import WRITABLE, ApiKey, ApiKeyScope, Membership, SshKey, Tenant, TenantState

User = get_user_model()

KEY_PREFIX = "ldr"
PREFIX_BYTES = 6


# --- staff ----------------------------------------------------------------------------------------------------


def staff_groups_ensure(*, using: str = "default") -> None:
    """Create the staff groups and give each exactly its listed permissions (idempotent)."""
    for role, perms in STAFF_PERMISSIONS.items():
        group, _ = Group.objects.using(using).get_or_create(name=role.value)
        wanted = []
        for dotted in perms:
            app_label, codename = dotted.split(".")
            perm = Permission.objects.using(using).filter(content_type__app_label=app_label, codename=codename).first()
            if perm is not None:  # not yet created while earlier apps are still migrating
                wanted.append(perm)
        group.permissions.set(wanted)


@transaction.atomic
def staff_user_create(*, username: str, role: StaffRole, password: str, actor: Actor) -> Any:
    if User.objects.filter(username=username).exists():
        raise Conflict("username_taken", "That username is not available.", field="username")
    user = User.objects.create_user(username=username, password=password, is_staff=True)
    user.groups.add(Group.objects.get(name=role.value))
    audit_record(actor=actor, action="staff.created", target_type="user", target_id=user.pk, data={"role": role})
    return user


# --- tenants --------------------------------------------------------------------------------------------------


class TenantNotActive(Forbidden):
    """A change refused because of the tenant's standing (403 ``tenant_not_active``), the same through the API, the
    portal and the consoles."""

    def __init__(self, state: str, detail: str | None = None) -> None:
        super().__init__("tenant_not_active", detail or f"The tenant is {state}: it can read but not change anything.")


def tenant_require_writable(tenant: Tenant, *, actor: Actor) -> None:
    """Refuse a write a tenant's own member or key makes for a tenant that is closing or closed. Every service that
    changes a tenant's things on its behalf asks this first, before any other rule (so the answer does not depend
    on the input). The state is read from the database, not from the object passed (which a caller may hold from
    before the closure began); a service that locks the tenant asks after taking the lock. Staff and the product's
    own work (the closure's steps, retention, erasure for a data subject) act on a closing tenant as before:
    ``Actor.for_tenant`` says who is who."""
    if not actor.for_tenant:
        return
    state = _tenant_state(tenant.pk)
    if state not in WRITABLE:
        raise TenantNotActive(state)


# Every write a tenant makes asks the state first (an allocation's POST among them), so it is read in plain SQL:
# the ORM compiled ``values_list("state").get(pk=...)`` again on every call, costing more than the query.
_TENANT_STATE = "SELECT {} FROM {} WHERE {} = %s".format(  # noqa: S608 - names from the model, no input
    Tenant._meta.get_field("state").column, Tenant._meta.db_table, Tenant._meta.pk.column
)


def _tenant_state(tenant_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(_TENANT_STATE, [tenant_id])
        row = cursor.fetchone()
    if row is None:
        raise Tenant.DoesNotExist("Tenant matching query does not exist.")  # as the ORM's get() says
    return str(row[0])


@transaction.atomic
def tenant_create(*, slug: str, name: str, username: str, email: str, password: str | None, actor: Actor) -> Tenant:
    """Create a tenant and its owner (a new user). Signing up also opens a billing account:
    ``lifecycle.services.customers.tenant_signup``."""
    if Tenant.objects.filter(slug=slug).exists():
        raise Conflict("slug_taken", f"The tenant slug '{slug}' is taken.", field="slug")
    if User.objects.filter(username=username).exists():
        raise Conflict("username_taken", "That username is not available.", field="username")
    tenant = Tenant.objects.create(slug=slug, name=name)
    owner = User.objects.create_user(username=username, email=email, password=password)
    membership = Membership.objects.create(tenant=tenant, user=owner, role=TenantRole.OWNER)
    audit_record(
        actor=actor,
        action="tenant.created",
        target_type="tenant",
        target_id=tenant.pk,
        tenant=tenant,
        data={"slug": slug, "name": name},
    )
    audit_record(
        actor=actor,
        action="member.added",
        target_type="membership",
        target_id=membership.pk,
        tenant=tenant,
        data={"username": username, "role": TenantRole.OWNER},
    )
    return tenant


@dataclass(frozen=True)
class Residency:
    regions: list[str] | None
    jurisdictions: list[str] | None
    sovereign: bool


@transaction.atomic
def tenant_update(
    *,
    tenant: Tenant,
    actor: Actor,
    name: str | None = None,
    residency: Residency | None = None,
    dedicated_hardware: bool | None = None,
    allow_soft_sharing: bool | None = None,
) -> Tenant:
    """Change a tenant's name, residency or isolation settings; each change is audited with old and new."""
    tenant = lock_tenant(tenant.pk)
    tenant_require_writable(tenant, actor=actor)
    if tenant.state != TenantState.ACTIVE:  # a suspended tenant keeps its settings until it has paid
        raise TenantNotActive(tenant.state, f"The tenant is {tenant.state}: its settings cannot change.")
    new: dict[str, Any] = {}
    if name is not None:
        new["name"] = name
    if residency is not None:
        if residency.sovereign and (residency.jurisdictions is None or len(residency.jurisdictions) != 1):
            raise Invalid(
                "validation_error",
                "A sovereign tenant names exactly one jurisdiction.",
                field="residency.jurisdictions",
            )
        new["residency_regions"] = sorted(set(residency.regions)) if residency.regions is not None else None
        new["residency_jurisdictions"] = (
            sorted(set(residency.jurisdictions)) if residency.jurisdictions is not None else None
        )
        new["sovereign"] = residency.sovereign
    if dedicated_hardware is not None:
        new["dedicated_hardware"] = dedicated_hardware
    if allow_soft_sharing is not None:
        new["allow_soft_sharing"] = allow_soft_sharing
    changes = {k: {"old": getattr(tenant, k), "new": v} for k, v in new.items() if getattr(tenant, k) != v}
    if not changes:
        return tenant
    for field_name, change in changes.items():
        setattr(tenant, field_name, change["new"])
    tenant.save(update_fields=list(changes))
    audit_record(
        actor=actor, action="tenant.updated", target_type="tenant", target_id=tenant.pk, tenant=tenant, data=changes
    )
    return tenant


class Unchanged:
    """A keyword left out: the value stays as it is (None means "none" for these settings)."""


UNCHANGED = Unchanged()


@transaction.atomic
def tenant_set_quota(
    *,
    tenant: Tenant,
    gpu_quota_milli: int | None,
    endpoint_calls_per_minute: int | None,
    actor: Actor,
    volume_quota_gb: int | Unchanged | None = UNCHANGED,
) -> Tenant:
    """Operators set a tenant's limits: its GPU quota (milli-GPU; None lifts it), the calls a minute each of its
    endpoints takes (None: ``LADDER_ENDPOINT_CALLS_PER_MINUTE``) and its storage quota in GB over its volumes (None
    lifts it; left out: unchanged). A quota below what the tenant holds refuses new storage, never deletes any."""
    if endpoint_calls_per_minute is not None and endpoint_calls_per_minute < 1:
        raise Invalid(
            "validation_error",
            "An endpoint takes at least one call a minute (suspend the tenant to stop its endpoints).",
            field="endpoint_calls_per_minute",
        )
    tenant = lock_tenant(tenant.pk)
    data = {
        "gpu_quota_milli": {"old": tenant.gpu_quota_milli, "new": gpu_quota_milli},
        "endpoint_calls_per_minute": {"old": tenant.endpoint_calls_per_minute, "new": endpoint_calls_per_minute},
    }
    tenant.gpu_quota_milli = gpu_quota_milli
    tenant.endpoint_calls_per_minute = endpoint_calls_per_minute
    if not isinstance(volume_quota_gb, Unchanged):
        data["volume_quota_gb"] = {"old": tenant.volume_quota_gb, "new": volume_quota_gb}
        tenant.volume_quota_gb = volume_quota_gb
    tenant.save(update_fields=["gpu_quota_milli", "endpoint_calls_per_minute", "volume_quota_gb"])
    audit_record(
        actor=actor, action="tenant.quota_set", target_type="tenant", target_id=tenant.pk, tenant=tenant, data=data
    )
    tenant_limits_set.send(sender=Tenant, tenant=tenant)
    return tenant


# --- members --------------------------------------------------------------------------------------------------


def _owners_left_after(tenant: Tenant, membership: Membership) -> int:
    return Membership.objects.filter(tenant=tenant, role=TenantRole.OWNER).exclude(pk=membership.pk).count()


@transaction.atomic
def member_invite(*, tenant: Tenant, actor_role: str, username: str, email: str, role: str, actor: Actor) -> Membership:
    """Add a person to the tenant as a new account.

    Existing accounts are never handed over, not even ones left without a tenant: their old credentials
    would come along. The answer does not say where a taken name is used, which would leak other tenants'
    members.
    """
    tenant_require_writable(lock_tenant(tenant.pk), actor=actor)
    if not may_assign_role(actor_role, role):
        raise Forbidden("owner_role_required", "Only an owner can add another owner.")
    if User.objects.filter(username=username).exists():
        raise Conflict("username_taken", "That username is not available.", field="username")
    user = User.objects.create_user(username=username, email=email, password=None)
    membership = Membership.objects.create(tenant=tenant, user=user, role=role)
    audit_record(
        actor=actor,
        action="member.added",
        target_type="membership",
        target_id=membership.pk,
        tenant=tenant,
        data={"username": username, "role": role},
    )
    return membership


@transaction.atomic
def member_change_role(*, membership: Membership, actor_role: str, role: str, actor: Actor) -> Membership:
    tenant_require_writable(lock_tenant(membership.tenant_id), actor=actor)
    membership = Membership.objects.select_related("tenant", "user").get(pk=membership.pk)
    old = membership.role
    if old == role:
        return membership
    if not may_assign_role(actor_role, role, old):
        raise Forbidden("owner_role_required", "Only an owner can make or unmake an owner.")
    if old == TenantRole.OWNER and _owners_left_after(membership.tenant, membership) == 0:
        raise Conflict("last_owner", "A tenant must keep at least one owner; make someone else owner first.")
    membership.role = role
    membership.save(update_fields=["role"])
    if not role_allows(role, Action.API_KEY_WRITE_SCOPE):
        # A demoted member's keys lose the write scope they may no longer hold.
        for key in lock_api_keys(ApiKey.objects.filter(user=membership.user, revoked_at=None)):
            if ApiKeyScope.WRITE in key.scopes:
                key.scopes = [s for s in key.scopes if s != ApiKeyScope.WRITE]
                key.save(update_fields=["scopes"])
    audit_record(
        actor=actor,
        action="member.role_changed",
        target_type="membership",
        target_id=membership.pk,
        tenant=membership.tenant,
        data={"username": membership.user.get_username(), "old": old, "new": role},
    )
    return membership


@transaction.atomic
def member_remove(*, membership: Membership, actor_role: str, actor: Actor) -> None:
    """Remove a member: the membership goes, the person's keys are revoked and the account is deactivated."""
    tenant_require_writable(lock_tenant(membership.tenant_id), actor=actor)
    membership = Membership.objects.select_related("tenant", "user").get(pk=membership.pk)
    if not may_assign_role(actor_role, membership.role, membership.role):
        raise Forbidden("owner_role_required", "Only an owner can remove an owner.")
    if membership.role == TenantRole.OWNER and _owners_left_after(membership.tenant, membership) == 0:
        raise Conflict("last_owner", "A tenant must keep at least one owner; make someone else owner first.")
    user, tenant = membership.user, membership.tenant
    now = timezone.now()
    keys = lock_api_keys(ApiKey.objects.filter(user=user, revoked_at=None))
    ApiKey.objects.filter(pk__in=[k.pk for k in keys]).update(revoked_at=now)
    membership_id = membership.pk
    membership.delete()
    user.is_active = False
    user.save(update_fields=["is_active"])
    audit_record(
        actor=actor,
        action="member.removed",
        target_type="membership",
        target_id=membership_id,
        tenant=tenant,
        data={"username": user.get_username(), "revoked_api_keys": [k.prefix for k in keys]},
    )
    for key in keys:
        gateway_key_forget(key.prefix)
    if keys:  # tokens their keys minted die with them
        endpoint_tokens_rotate(tenant=tenant, actor=actor, reason=f"{user.get_username()} removed")


# --- API keys -------------------------------------------------------------------------------------------------


def hash_secret(secret: str) -> str:
    # Secrets carry 256 bits of entropy, so a fast hash is enough; a slow KDF would only slow every request.
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    token: str  # shown once, never stored


@transaction.atomic
def api_key_create(*, user: Any, name: str, scopes: list[str], expires_at: datetime | None, actor: Actor) -> IssuedKey:
    membership = Membership.objects.filter(user=user).select_related("tenant").first()
    tenant = membership.tenant if membership else None
    if tenant is not None:
        tenant_require_writable(tenant, actor=actor)
    if not scopes:
        raise Invalid("validation_error", "Give at least one scope.", field="scopes")
    if ApiKeyScope.WRITE in scopes and membership and not role_allows(membership.role, Action.API_KEY_WRITE_SCOPE):
        raise Forbidden("scope_not_allowed", f"A {membership.role} may hold read-only keys only.")
    if expires_at is not None and expires_at <= timezone.now():
        raise Invalid("validation_error", "The expiry must be in the future.", field="expires_at")
    prefix = secrets.token_hex(PREFIX_BYTES)
    while ApiKey.objects.filter(prefix=prefix).exists():  # 48 bits: a repeat is rare, but must not be a 500
        prefix = secrets.token_hex(PREFIX_BYTES)
    secret = secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        user=user,
        tenant=tenant,
        name=name,
        prefix=prefix,
        secret_hash=hash_secret(secret),
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
    )
    audit_record(
        actor=actor,
        action="api_key.created",
        target_type="api_key",
        target_id=key.pk,
        tenant=tenant,
        data={"prefix": prefix, "name": name, "scopes": key.scopes, "owner": user.get_username()},
    )
    return IssuedKey(key=key, token=f"{KEY_PREFIX}_{prefix}_{secret}")


@transaction.atomic
def api_key_revoke(*, key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke a key; revoking a revoked key changes nothing and records nothing."""
    if key.tenant is not None:  # staff keys belong to no tenant
        tenant_require_writable(key.tenant, actor=actor)
    if ApiKey.objects.filter(pk=key.pk, revoked_at=None).update(revoked_at=timezone.now()) == 1:
        key.refresh_from_db()
        audit_record(
            actor=actor,
            action="api_key.revoked",
            target_type="api_key",
            target_id=key.pk,
            tenant=key.tenant,
            data={"prefix": key.prefix, "name": key.name},
        )
        gateway_key_forget(key.prefix)
        if key.tenant is not None:  # the endpoint tokens it minted die with it
            endpoint_tokens_rotate(tenant=key.tenant, actor=actor, reason=f"API key {key.prefix} revoked")
    return key


def endpoint_tokens_rotate_requested(*, tenant: Tenant, actor: Actor) -> int:
    """A tenant's owner or admin asks that every endpoint token minted so far be refused: a write of the tenant's,
    so only while it may change its things. Returns the signing key's new generation."""
    tenant_require_writable(tenant, actor=actor)
    return endpoint_tokens_rotate(tenant=tenant, actor=actor, reason="rotated on request")


class _KeyLookup:
    """The key a prefix names, with its user, the user's membership and its tenant: the request needs them next
    (one query, not four). Every API request runs it, so it is plain SQL built once per process; the ORM compiled
    this four-table join again on every request. Nothing is cached between requests: a key revoked, a user
    deactivated or a tenant suspended is refused from the next request on."""

    def __init__(self) -> None:
        user_model = get_user_model()
        self.parts = (
            Columns(ApiKey, "k"),
            Columns(user_model, "u"),
            Columns(Membership, "m"),
            Columns(Tenant, "t"),
        )
        q = connection.ops.quote_name

        def table(model: Any) -> str:
            return q(model._meta.db_table)

        def column(model: Any, field: str) -> str:
            return q(model._meta.get_field(field).column)

        user_pk = column(user_model, user_model._meta.pk.name)
        self.sql = (
            f"SELECT {', '.join(p.sql for p in self.parts)} FROM {table(ApiKey)} k "  # noqa: S608 - no input
            f"JOIN {table(user_model)} u ON u.{user_pk} = k.{column(ApiKey, 'user')} "
            f"LEFT JOIN {table(Membership)} m ON m.{column(Membership, 'user')} = u.{user_pk} "
            f"LEFT JOIN {table(Tenant)} t ON t.{column(Tenant, 'id')} = m.{column(Membership, 'tenant')} "
            f"WHERE k.{column(ApiKey, 'prefix')} = %s"
        )

    def __call__(self, prefix: str) -> ApiKey | None:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, [prefix])  # the prefix is unique: one row or none
            row = cursor.fetchone()
        if row is None:
            return None
        key, user, membership, tenant = (self._instance(row, i) for i in range(4))
        ApiKey.user.field.set_cached_value(key, user)
        # As select_related leaves them: a user without a membership (staff) has it cached as none.
        get_user_model().membership.related.set_cached_value(user, membership)
        if membership is not None:
            Membership.user.field.set_cached_value(membership, user)
            Membership.tenant.field.set_cached_value(membership, tenant)
        return key

    def _instance(self, row: Any, index: int) -> Any:
        return self.parts[index].instance(row, sum(p.width for p in self.parts[:index]))


_key_lookup: _KeyLookup | None = None


def _api_key_with_owner(prefix: str) -> ApiKey | None:
    global _key_lookup  # built on first use: the columns are quoted by the database's own rules
    if _key_lookup is None:
        _key_lookup = _KeyLookup()
    return _key_lookup(prefix)


def api_key_authenticate(token: str) -> ApiKey | None:
    """The usable key a token names, or None. Comparison is constant-time."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    key = _api_key_with_owner(parts[1])
    if key is None or not secrets.compare_digest(key.secret_hash, hash_secret(parts[2])):
        return None
    if not key.is_usable() or not key.user.is_active:
        return None
    return key


def api_key_mark_used(*, key_id: int, at: datetime) -> bool:
    """Record that a key was used at ``at``; never moves the time backwards (compare-and-swap)."""
    updated = ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=at), pk=key_id).update(
        last_used_at=at
    )
    return updated == 1


# --- SSH keys -------------------------------------------------------------------------------------------------


@transaction.atomic
def ssh_key_add(*, tenant: Tenant, name: str, public_key: str, actor: Actor) -> SshKey:
    """Register a public key for the tenant (422 ``invalid_ssh_key`` naming why; 409 when the name or the key is
    registered already)."""
    tenant_require_writable(lock_tenant(tenant.pk), actor=actor)  # and two adds of one key: the second finds the first
    try:
        parsed = ssh.parse(public_key)
    except ssh.SshKeyError as error:
        raise Invalid("invalid_ssh_key", str(error), field="public_key") from None
    existing = SshKey.objects.filter(tenant=tenant, fingerprint=parsed.fingerprint).first()
    if existing is not None:
        raise Conflict("ssh_key_exists", f"This key is registered already, as '{existing.name}'.", field="public_key")
    if SshKey.objects.filter(tenant=tenant, name=name).exists():
        raise Conflict("ssh_key_name_taken", f"A key named '{name}' is registered already.", field="name")
    key = SshKey.objects.create(
        tenant=tenant,
        name=name,
        key_type=parsed.key_type,
        bits=parsed.bits,
        fingerprint=parsed.fingerprint,
        public_key=parsed.line,
        created_by=actor.label,
    )
    audit_record(
        actor=actor,
        action="ssh_key.added",
        target_type="ssh_key",
        target_id=key.pk,
        tenant=tenant,
        data={"name": name, "fingerprint": parsed.fingerprint, "type": parsed.key_type, "bits": parsed.bits},
    )
    return key


@transaction.atomic
def ssh_key_remove(*, key: SshKey, actor: Actor) -> None:
    """Forget a key; work started with it keeps the copy it was given, new work cannot name it."""
    tenant_require_writable(key.tenant, actor=actor)
    if SshKey.objects.filter(pk=key.pk).delete()[0]:
        audit_record(
            actor=actor,
            action="ssh_key.removed",
            target_type="ssh_key",
            target_id=key.pk,
            tenant=key.tenant,
            data={"name": key.name, "fingerprint": key.fingerprint},
        )
