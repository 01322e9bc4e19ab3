"""The data-asset registry: what the product stores for a tenant, encrypted under its own keys, and the one path
by which anything is deleted.

Every deletion (retention, a tenant's delete, an erasure request, account closure) goes through ``assets_schedule``
then, after the waiting period, ``assets_shred``; both run under the tenant's row lock, which legal holds take
too, so a hold placed while a deletion runs is always seen by it. Content is encrypted (``compliance.domain.envelope``)
before it reaches storage (``compliance.storage``); shredding destroys the wrapped data key, so what storage still
holds (a backup, a lagging replica) can no longer be read.

Lock order: Tenant (``lock_tenant``) -> DataAsset rows -> AuditChainHead.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from compliance import storage
from compliance.domain import envelope, retention
from compliance.events import assets_scheduled, assets_shredded
from compliance.models import AssetState, DataAsset, HoldState, LegalHold, RetentionPolicy, ShredReason, TenantKey
from core.actor import Actor
from core.audit import audit_record, audit_record_many
from core.errors import Conflict, Invalid, ServiceError
from core.keys import key_setting
from provisioning.models import Region
from provisioning.selectors import residency_refusal
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable

SYSTEM = Actor.system("data-lifecycle")


class ResidencyRefused(ServiceError):
    """Data may not be stored in that region for this tenant (409 ``residency``)."""

    def __init__(self, message: str) -> None:
        super().__init__("residency", message, field="region")


class LegalHoldActive(Conflict):
    def __init__(self, hold_ids: Sequence[int]) -> None:
        names = ", ".join(str(h) for h in hold_ids)
        super().__init__(
            "legal_hold",
            f"A legal hold preserves this data (hold {names}); nothing it covers can be deleted until it is released.",
            extra={"holds": list(hold_ids)},
        )


# --- keys ----------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _ring(configured: str, secret_key: str) -> envelope.MasterKeyRing:
    if configured:
        return envelope.MasterKeyRing.parse(configured)
    derived = hashlib.sha256(b"ladder-master-key\0" + secret_key.encode()).digest()
    return envelope.MasterKeyRing(keys={"derived": derived}, current_id="derived")


def master_ring() -> envelope.MasterKeyRing:
    """The master keys of ``LADDER_MASTER_KEYS`` (from its key source, ``core.keys``); without it one derived from
    ``SECRET_KEY`` (set one in production)."""
    return _ring(key_setting("LADDER_MASTER_KEYS"), settings.SECRET_KEY)


def tenant_key(tenant: Tenant) -> bytes:
    """The tenant's key in the clear, made on first use. Refused once the tenant key is shredded."""
    row = TenantKey.objects.filter(tenant=tenant).first()
    if row is None:
        with transaction.atomic():
            key = envelope.new_tenant_key()
            sealed = envelope.seal_tenant_key(key, master_ring(), tenant.pk)
            row, made = TenantKey.objects.get_or_create(
                tenant=tenant, defaults={"master_id": sealed.master_id, "wrapped": sealed.blob}
            )
            if made:
                return key
    if row.wrapped is None:
        raise Conflict("tenant_key_shredded", "The tenant's key is shredded: none of its data can be read again.")
    return envelope.open_tenant_key(envelope.WrappedKey(row.master_id, bytes(row.wrapped)), master_ring(), tenant.pk)


def master_key_rotate(*, actor: Actor) -> dict[str, int]:
    """Re-wrap every tenant key under the current master key; data keys and content are not touched. Idempotent:
    keys already under the current master stay as they are (run it again after a crash)."""
    ring = master_ring()
    counts = {"rewrapped": 0, "current": 0, "shredded": 0}
    for key_id in TenantKey.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            row = TenantKey.objects.select_for_update(no_key=True).select_related("tenant").get(pk=key_id)
            if row.wrapped is None:
                counts["shredded"] += 1
                continue
            if row.master_id == ring.current_id:
                counts["current"] += 1
                continue
            before = row.master_id
            fresh = envelope.rewrap_tenant_key(
                envelope.WrappedKey(row.master_id, bytes(row.wrapped)), ring, row.tenant_id
            )
            row.master_id, row.wrapped, row.rotated_at = fresh.master_id, fresh.blob, timezone.now()
            row.save(update_fields=["master_id", "wrapped", "rotated_at"])
            audit_record(
                actor=actor,
                action="tenant_key.rewrapped",
                target_type="tenant_key",
                target_id=row.tenant_id,
                tenant=row.tenant,
                data={"from_master": before, "to_master": fresh.master_id},
            )
            counts["rewrapped"] += 1
    return counts


# --- rules: residency, retention, holds ------------------------------------------------------------------------


def residency_check(tenant: Tenant, region: Region) -> None:
    refusal = residency_refusal(tenant, region)
    if refusal is not None:
        raise ResidencyRefused(refusal)


def region_resolve(code: str) -> Region:
    region = Region.objects.filter(code=code).first()
    if region is None:
        raise Invalid("validation_error", f"There is no region {code!r}.", field="region")
    return region


def retention_defaults() -> dict[str, int]:
    return {**retention.DEFAULT_DAYS, **retention.parse_days(settings.LADDER_RETENTION_DAYS)}


def retention_keep_days(tenant_ids: Iterable[int]) -> dict[int, dict[str, int | None]]:
    """Effective retention (days; None: zero retention) per tenant and category: the longest rule wins."""
    defaults = retention_defaults()
    overrides: dict[int, dict[str, retention.Rule]] = {tenant_id: {} for tenant_id in tenant_ids}
    for row in RetentionPolicy.objects.filter(tenant_id__in=list(overrides)):
        overrides[row.tenant_id][row.category] = row.rule()
    return {t: retention.rules_for(rules, defaults, retention.LEGAL_MINIMUM_DAYS) for t, rules in overrides.items()}


def holds_active(tenant_ids: Iterable[int] | None = None) -> retention.Holds:
    holds = LegalHold.objects.filter(state=HoldState.ACTIVE)
    if tenant_ids is not None:
        holds = holds.filter(tenant_id__in=list(tenant_ids))
    return retention.Holds(hold.scope() for hold in holds)


def shred_wait() -> timedelta:
    return timedelta(days=settings.LADDER_SHRED_WAIT_DAYS)


@dataclass(frozen=True)
class AssetScope:
    """Which of a tenant's assets a legal hold or an erasure request reaches: categories (none: all) created in an
    inclusive date range (open ends: unbounded), as ``retention.HoldScope.covers`` decides for one asset."""

    categories: Sequence[str] = ()
    created_from: datetime | None = None
    created_to: datetime | None = None

    def check(self) -> None:
        unknown = set(self.categories) - set(retention.Category)
        if unknown:
            raise Invalid("validation_error", f"Unknown categories: {sorted(unknown)}.", field="categories")
        if self.created_from and self.created_to and self.created_from > self.created_to:
            raise Invalid("validation_error", "created_from is after created_to.", field="created_from")

    def assets(self, tenant: Tenant) -> QuerySet[DataAsset]:
        assets = DataAsset.objects.filter(tenant=tenant)
        if self.categories:
            assets = assets.filter(category__in=list(self.categories))
        if self.created_from is not None:
            assets = assets.filter(created_at__gte=self.created_from)
        if self.created_to is not None:
            assets = assets.filter(created_at__lte=self.created_to)
        return assets


# --- registering and reading ------------------------------------------------------------------------------------


def _storage_key(tenant: Tenant, asset_id: int) -> str:
    return f"{tenant.slug}/{asset_id}"


def data_asset_create(
    *,
    tenant: Tenant,
    name: str,
    category: str,
    region: str,
    size_bytes: int | None = None,
    derived_from: Sequence[int] = (),
    content: bytes | None = None,
    actor: Actor,
    now: datetime | None = None,
) -> DataAsset:
    """Register an asset (and store its content, encrypted under a data key of its own, when given)."""
    tenant_require_writable(tenant, actor=actor)
    if category not in retention.Category.__members__.values():
        raise Invalid("validation_error", f"Unknown category {category!r}.", field="category")
    if content is not None:
        if size_bytes is not None and size_bytes != len(content):
            raise Invalid(
                "validation_error",
                f"size_bytes is {size_bytes} but the content has {len(content)} bytes.",
                field="size_bytes",
            )
        size_bytes = len(content)
    if size_bytes is None:
        raise Invalid("validation_error", "size_bytes is required without content.", field="size_bytes")
    if retention_keep_days([tenant.pk])[tenant.pk][category] is None:
        raise Conflict(
            "zero_retention",
            f"The tenant's retention for {category} is zero retention: the product does not persist it.",
        )
    where = region_resolve(region)
    residency_check(tenant, where)
    sources = list(DataAsset.objects.filter(tenant=tenant, pk__in=set(derived_from)))
    missing = set(derived_from) - {s.pk for s in sources}
    if missing:
        raise Invalid("validation_error", f"Unknown assets in derived_from: {sorted(missing)}.", field="derived_from")
    with transaction.atomic():
        asset = DataAsset.objects.create(
            tenant=tenant,
            name=name,
            category=category,
            region=where,
            size_bytes=size_bytes,
            created_at=now or timezone.now(),
        )
        asset.derived_from.set(sources)
        if content is not None:
            data_key = envelope.new_data_key()
            sealed = envelope.encrypt(content, data_key, asset_id=asset.pk)
            asset.key_id = envelope.fingerprint(data_key)
            asset.wrapped_key = envelope.seal_data_key(data_key, tenant_key(tenant), asset.pk)
            # Written before the row commits: a row never points at nothing. A rollback leaves a blob nobody
            # can open (its key was never stored).
            asset.location = storage.blob_put(region=where.code, key=_storage_key(tenant, asset.pk), data=sealed)
            asset.save(update_fields=["key_id", "wrapped_key", "location"])
        audit_record(
            actor=actor,
            action="data_asset.created",
            target_type="data_asset",
            target_id=asset.pk,
            tenant=tenant,
            data={
                "name": name,
                "category": category,
                "region": where.code,
                "size_bytes": size_bytes,
                "derived_from": sorted(s.pk for s in sources),
                "key_id": asset.key_id,
            },
        )
    return asset


def _readable(asset: DataAsset) -> None:
    _not_a_volume(asset, "its content is read by mounting the volume in a workload")
    if asset.state == AssetState.SHREDDED:
        raise Conflict("asset_shredded", "This asset is shredded: its data key is destroyed and the content is gone.")
    if asset.state == AssetState.SHREDDING:
        raise Conflict(
            "asset_shredding",
            f"This asset is scheduled for shredding on {asset.shred_after:%Y-%m-%d %H:%M} UTC; cancel that to read it.",
        )
    if not asset.location:
        raise Conflict("no_content", "This asset was registered without content.", status=404)


def data_asset_content(*, asset: DataAsset) -> bytes:
    """The asset's content, decrypted."""
    _readable(asset)
    data_key = envelope.open_data_key(bytes(asset.wrapped_key or b""), tenant_key(asset.tenant), asset.pk)
    return envelope.decrypt(storage.blob_get(asset.location), data_key, asset_id=asset.pk)


def _not_a_volume(asset: DataAsset, why: str) -> None:
    """A volume's asset changes with its volume only: its deletion is the volume's (which refuses while work mounts
    it), it does not move (a volume lives in its region) and its content is read by mounting the volume."""
    if asset.volume_id is not None:
        raise Conflict(
            "volume_asset", f"This asset is volume {asset.volume_id}'s: {why} (/api/v1/volumes/{asset.volume_id})."
        )


def _movable(asset: DataAsset) -> None:
    _not_a_volume(asset, "a volume stays in its region; snapshot it and restore the snapshot there instead")
    if asset.state != AssetState.LIVE:
        raise Conflict("asset_not_live", f"Only live assets can be moved; this one is {asset.state}.")


def data_asset_move(*, asset: DataAsset, region: str, actor: Actor) -> DataAsset:
    """Move an asset's content to another region (residency checked); the ciphertext is copied as it is.

    The copy is made before the transaction, so no lock is held over storage I/O; the move commits only if the
    asset is still live and where it was (409 ``asset_moved`` after a concurrent move), else the copy is removed.
    """
    tenant_require_writable(asset.tenant, actor=actor)
    where = region_resolve(region)
    residency_check(asset.tenant, where)
    asset = DataAsset.objects.select_related("tenant", "region").get(pk=asset.pk)
    _movable(asset)
    if where.pk == asset.region_id:
        return asset
    old_location = asset.location
    new_location = ""
    if old_location:
        new_location = storage.blob_put(
            region=where.code, key=_storage_key(asset.tenant, asset.pk), data=storage.blob_get(old_location)
        )
    try:
        with transaction.atomic():
            lock_tenant(asset.tenant_id)
            current = DataAsset.objects.select_for_update(no_key=True, of=("self",)).get(pk=asset.pk)
            _movable(current)
            if (current.region_id, current.location) != (asset.region_id, old_location):
                raise Conflict("asset_moved", "The asset was moved meanwhile; look it up again and retry.")
            before = asset.region.code
            asset.region, asset.location = where, new_location
            asset.save(update_fields=["region", "location"])
            audit_record(
                actor=actor,
                action="data_asset.moved",
                target_type="data_asset",
                target_id=asset.pk,
                tenant=asset.tenant,
                data={"from": before, "to": where.code},
            )
            if old_location:
                transaction.on_commit(lambda: _blobs_delete([old_location]))
    except BaseException:
        # Unless a concurrent move to the same region stored the asset exactly there (locations are per region).
        if new_location and not DataAsset.objects.filter(pk=asset.pk, location=new_location).exists():
            _blobs_delete([new_location])
        raise
    return asset


# --- deleting: schedule, cancel, shred ---------------------------------------------------------------------------


def assets_schedule(
    *, tenant: Tenant, assets: Sequence[DataAsset], reason: str, actor: Actor, now: datetime
) -> list[DataAsset]:
    """Start the waiting period of live ``assets`` (under the tenant's lock, holds already asked by the caller).
    Assets no longer live (another deletion got there first) are left alone; the ones scheduled are returned."""
    ids = [a.pk for a in assets if a.state == AssetState.LIVE]
    if not ids:
        return []
    after = now + shred_wait()
    live = list(
        DataAsset.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=ids, state=AssetState.LIVE)
        .order_by("pk")
    )
    DataAsset.objects.filter(pk__in=[a.pk for a in live]).update(
        state=AssetState.SHREDDING, shred_reason=reason, shred_requested_at=now, shred_after=after
    )
    audit_record_many(
        actor=actor,
        action="data_asset.shred_scheduled",
        target_type="data_asset",
        tenant=tenant,
        entries=[(a.pk, {"reason": reason, "category": a.category, "shred_after": after.isoformat()}) for a in live],
    )
    for asset in live:
        asset.state, asset.shred_reason, asset.shred_requested_at, asset.shred_after = (
            AssetState.SHREDDING,
            reason,
            now,
            after,
        )
    assets_scheduled.send(sender=DataAsset, assets=live, reason=reason, at=now)
    return live


def assets_shred(*, tenant: Tenant, assets: Sequence[DataAsset], actor: Actor, now: datetime) -> list[DataAsset]:
    """Destroy the data keys of ``assets`` (in ``shredding``; holds already asked by the caller, under the tenant's
    lock). Each shredding is audited as deletion evidence; the ciphertext is removed from storage after commit."""
    ids = [a.pk for a in assets if a.state == AssetState.SHREDDING]
    due = list(
        DataAsset.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=ids, state=AssetState.SHREDDING)
        .select_related("region")
        .order_by("pk")
    )
    if not due:
        return []
    DataAsset.objects.filter(pk__in=[a.pk for a in due]).update(
        state=AssetState.SHREDDED, wrapped_key=None, shredded_at=now
    )
    audit_record_many(
        actor=actor,
        action="data_asset.shredded",
        target_type="data_asset",
        tenant=tenant,
        entries=[(a.pk, _evidence(a, now)) for a in due],
    )
    # A volume's location names its backend volume, which leaves once ``assets_shredded`` is heard, not a blob.
    locations = [a.location for a in due if a.location and a.volume_id is None]
    if locations:
        transaction.on_commit(lambda: _blobs_delete(locations))
    for asset in due:
        asset.state, asset.wrapped_key, asset.shredded_at = AssetState.SHREDDED, None, now
    assets_shredded.send(sender=DataAsset, assets=due, at=now)
    return due


def _evidence(asset: DataAsset, now: datetime) -> dict[str, Any]:
    """What a deletion certificate says: which data, under which key, why, requested when, destroyed when."""
    return {
        "name": asset.name,
        "category": asset.category,
        "region": asset.region.code,
        "size_bytes": asset.size_bytes,
        "key_id": asset.key_id,
        "reason": asset.shred_reason,
        "requested_at": asset.shred_requested_at.isoformat() if asset.shred_requested_at else None,
        "shredded_at": now.isoformat(),
        "method": "crypto-shredding: wrapped data key destroyed",
    }


def _blobs_delete(locations: Sequence[str]) -> None:
    # The key is gone: a blob left behind is unreadable noise, for the storage's own lifecycle rules to remove.
    for location in locations:
        with suppress(storage.StorageError):
            storage.blob_delete(location)


def data_asset_delete(*, asset: DataAsset, actor: Actor, now: datetime | None = None) -> DataAsset:
    """A tenant's delete: refused under a legal hold, else the asset starts its waiting period."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(asset.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        asset = DataAsset.objects.get(pk=asset.pk)
        _not_a_volume(asset, "delete the volume itself")
        if asset.state != AssetState.LIVE:
            return asset  # deleting twice changes nothing
        held = holds_active([tenant.pk]).covering(tenant.pk, asset.category, asset.created_at)
        if held:
            raise LegalHoldActive(held)
        assets_schedule(tenant=tenant, assets=[asset], reason=ShredReason.DELETE, actor=actor, now=now)
    asset.refresh_from_db()
    return asset


CANCELLABLE = (ShredReason.DELETE, ShredReason.RETENTION)


def data_asset_shred_cancel(*, asset: DataAsset, actor: Actor) -> DataAsset:
    """Take an asset back from its waiting period (a delete or retention). Erasure and closure are not undone here:
    the data subject or the leaving tenant asked for them."""
    with transaction.atomic():
        tenant = lock_tenant(asset.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        asset = DataAsset.objects.select_for_update(no_key=True, of=("self",)).get(pk=asset.pk)
        if asset.state != AssetState.SHREDDING:
            raise Conflict("not_shredding", f"This asset is {asset.state}; only a scheduled shredding is cancelled.")
        if asset.volume_id is not None:
            raise Conflict(
                "not_cancellable",
                "A volume's deletion is not taken back: it stopped being mounted and billed when it began.",
            )
        if asset.shred_reason not in CANCELLABLE:
            raise Conflict(
                "not_cancellable", f"A shredding for {asset.shred_reason} is not cancelled by a tenant's request."
            )
        reason = asset.shred_reason
        asset.state, asset.shred_reason, asset.shred_requested_at, asset.shred_after = AssetState.LIVE, "", None, None
        asset.save(update_fields=["state", "shred_reason", "shred_requested_at", "shred_after"])
        audit_record(
            actor=actor,
            action="data_asset.shred_cancelled",
            target_type="data_asset",
            target_id=asset.pk,
            tenant=tenant,
            data={"reason": reason},
        )
    return asset


def content_decode(text: str) -> bytes:
    """Inline content from the API (base64), within ``LADDER_ASSET_CONTENT_MAX_BYTES``."""
    try:
        content = base64.b64decode(text, validate=True)
    except ValueError:
        raise Invalid("validation_error", "content is not valid base64.", field="content") from None
    limit = settings.LADDER_ASSET_CONTENT_MAX_BYTES
    if len(content) > limit:
        raise Invalid(
            "content_too_large",
            f"Inline content is limited to {limit} bytes; register larger data by size only.",
            field="content",
        )
    return content
