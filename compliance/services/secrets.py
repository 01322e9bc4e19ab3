"""A tenant's secrets: write-only values under the tenant's key.

Each value is encrypted under a fresh data key, wrapped by the tenant key (``compliance/domain/envelope.py``), and bound
to the tenant, the name and the version, so a row copied to another tenant or name does not open. A value is never
written to the audit log, a log line, an API answer or an error message: events carry the name and version only.
Shredding the tenant key (account closure) makes every secret unreadable with the rest of the tenant's data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from compliance.domain import envelope
from compliance.models import TenantSecret
from compliance.services.assets import tenant_key
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid
from provisioning.domain.states import HOLDS_DEVICES
from provisioning.domain.workloads import Workload
from provisioning.models import Allocation
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable

# Names become environment variables or file names in the tenant's workloads.
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
MAX_VALUE_BYTES = 64 * 1024


def _owner(secret: TenantSecret) -> str:
    return f"secret:{secret.tenant_id}:{secret.name}:{secret.version}"


def _seal(secret: TenantSecret, value: str) -> None:
    data_key = envelope.new_data_key()
    secret.wrapped_key = envelope.seal_data_key(data_key, tenant_key(secret.tenant), _owner(secret))
    secret.ciphertext = envelope.encrypt(value.encode(), data_key, asset_id=_owner(secret))


def secret_name_check(name: str) -> None:
    if not NAME_RE.match(name):
        raise Invalid(
            "invalid_secret_name",
            "A secret's name is a letter or underscore, then letters, digits or underscores (at most 100): it "
            "becomes an environment variable in the workloads that name it.",
            field="name",
        )


def _value_check(value: str) -> None:
    if not value:
        raise Invalid("secret_empty", "A secret's value may not be empty.", field="value")
    if len(value.encode()) > MAX_VALUE_BYTES:
        raise Invalid("secret_too_large", f"A secret's value is at most {MAX_VALUE_BYTES} bytes.", field="value")


def _store(secret: TenantSecret, value: str, actor: Actor) -> TenantSecret:
    secret.updated_at = timezone.now()
    secret.updated_by = actor.label
    _seal(secret, value)
    secret.save()
    return secret


def _evidence(secret: TenantSecret) -> dict[str, object]:
    return {"name": secret.name, "version": secret.version}  # never the value


@transaction.atomic
def secret_create(*, tenant: Tenant, name: str, value: str, actor: Actor) -> TenantSecret:
    """A new secret at version 1 (409 ``secret_exists`` when the tenant has one of that name)."""
    tenant_require_writable(lock_tenant(tenant.pk), actor=actor)  # one writer per tenant: no name or version twice
    secret_name_check(name)
    _value_check(value)
    if TenantSecret.objects.filter(tenant=tenant, name=name).exists():
        raise Conflict(
            "secret_exists", f"A secret named {name} exists; PUT /api/v1/secrets/{name} changes it.", field="name"
        )
    secret = _store(TenantSecret(tenant=tenant, name=name, version=1), value, actor)
    audit_record(
        actor=actor,
        action="secret.created",
        target_type="secret",
        target_id=secret.pk,
        tenant=tenant,
        data=_evidence(secret),
    )
    return secret


@transaction.atomic
def secret_update(*, secret: TenantSecret, value: str, actor: Actor) -> TenantSecret:
    """A new value: the next version, under a new data key (the old value is gone)."""
    tenant_require_writable(lock_tenant(secret.tenant_id), actor=actor)
    _value_check(value)
    current = TenantSecret.objects.select_related("tenant").get(pk=secret.pk)
    current.version += 1
    _store(current, value, actor)
    audit_record(
        actor=actor,
        action="secret.updated",
        target_type="secret",
        target_id=current.pk,
        tenant=current.tenant,
        data=_evidence(current),
    )
    return current


def _users(secret: TenantSecret) -> list[int]:
    """The tenant's allocations, still holding devices, whose workload names the secret."""
    live = Allocation.objects.filter(tenant_id=secret.tenant_id, state__in=HOLDS_DEVICES, workload__isnull=False)
    return [
        allocation.pk
        for allocation in live.only("pk", "workload")
        if secret.name in Workload.from_json(allocation.workload or {}).secret_names
    ]


@transaction.atomic
def secret_delete(*, secret: TenantSecret, actor: Actor) -> None:
    """Delete the secret: its wrapped data key goes with the row, so the value is gone for good. Refused (409
    ``secret_in_use``) while a live allocation's workload names it: its workload is rendered from it again on
    every reconcile and restart."""
    tenant_require_writable(lock_tenant(secret.tenant_id), actor=actor)
    users = _users(secret)
    if users:
        raise Conflict(
            "secret_in_use",
            f"Allocations {', '.join(map(str, users))} use the secret {secret.name}; stop them first (PUT gives it "
            "a new value instead).",
        )
    if TenantSecret.objects.filter(pk=secret.pk).delete()[0]:
        audit_record(
            actor=actor,
            action="secret.deleted",
            target_type="secret",
            target_id=secret.pk,
            tenant=secret.tenant,
            data=_evidence(secret),
        )


def secret_values(*, tenant: Tenant, names: Iterable[str]) -> dict[str, str]:
    """The values of the named secrets, for rendering them into the tenant's own namespace; an unknown name is
    refused (naming the names, never a value)."""
    wanted = sorted(set(names))
    found = {s.name: s for s in TenantSecret.objects.filter(tenant=tenant, name__in=wanted).select_related("tenant")}
    missing = [n for n in wanted if n not in found]
    if missing:
        raise Invalid("unknown_secret", f"No secret named {', '.join(missing)}.", field="secrets")
    key = tenant_key(tenant)
    values = {}
    for name, secret in found.items():
        data_key = envelope.open_data_key(bytes(secret.wrapped_key), key, _owner(secret))
        values[name] = envelope.decrypt(bytes(secret.ciphertext), data_key, asset_id=_owner(secret)).decode()
    return values
