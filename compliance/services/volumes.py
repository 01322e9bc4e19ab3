"""A volume as governed data: each volume has a data asset of category ``volume`` that carries its region, its
size, its own data key (wrapped by the tenant's key, like every asset's) and everything that governs it: retention,
legal holds, erasure requests, account closure, the residency report.

Shredding the asset destroys the wrapped data key first; the volume itself then leaves the backend
(``lifecycle.receivers``, on ``compliance.events.assets_shredded``). docs/volumes.md says what is destroyed when.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from compliance.domain import envelope, retention
from compliance.models import AssetState, DataAsset, ShredReason
from compliance.services.assets import (
    AssetScope,
    LegalHoldActive,
    assets_schedule,
    holds_active,
    retention_keep_days,
    tenant_key,
)
from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict
from provisioning.domain.volumes import VolumeState
from provisioning.models import Volume
from tenancy.locks import lock_tenant
from tenancy.models import Tenant

GB = 1024**3  # a volume's GB is a GiB, as Kubernetes sizes claims ("100Gi")


def volume_location(volume: Volume) -> str:
    """Where the asset's content is: the volume in its backend (``volume://<region>/<tenant>/<backend name>``)."""
    return f"volume://{volume.region.code}/{volume.tenant.slug}/{volume.backend_name}"


def volume_asset_create(*, volume: Volume, actor: Actor, now: datetime | None = None) -> DataAsset:
    """The volume's asset, with a new data key of its own wrapped by the tenant's key. Inside the transaction that
    made the volume. Refused (409 ``zero_retention``) when the tenant keeps no volume data at all."""
    tenant = volume.tenant
    if retention_keep_days([tenant.pk])[tenant.pk][retention.Category.VOLUME] is None:
        raise Conflict(
            "zero_retention",
            "Your retention for volumes is zero retention: the product keeps no volume of yours.",
        )
    with transaction.atomic():
        asset = DataAsset.objects.create(
            tenant=tenant,
            name=f"volume {volume.name}",
            category=retention.Category.VOLUME,
            region=volume.region,
            size_bytes=volume.size_gb * GB,
            created_at=now or timezone.now(),
            location=volume_location(volume),
            volume=volume,
        )
        data_key = envelope.new_data_key()
        asset.key_id = envelope.fingerprint(data_key)
        asset.wrapped_key = envelope.seal_data_key(data_key, tenant_key(tenant), asset.pk)
        asset.save(update_fields=["key_id", "wrapped_key"])
        audit_record(
            actor=actor,
            action="data_asset.created",
            target_type="data_asset",
            target_id=asset.pk,
            tenant=tenant,
            data={
                "name": asset.name,
                "category": asset.category,
                "region": volume.region.code,
                "size_bytes": asset.size_bytes,
                "volume": volume.pk,
                "key_id": asset.key_id,
            },
        )
    return asset


def volume_asset_update(*, volume: Volume) -> None:
    """The volume grew or was renamed: its asset says so (the change itself is audited by the volume)."""
    DataAsset.objects.filter(volume=volume).update(name=f"volume {volume.name}", size_bytes=volume.size_gb * GB)


def volume_data_key(*, volume: Volume) -> bytes:
    """The volume's data key in the clear, for the backend's per-volume encryption (Kubernetes: the passphrase
    Secret the CSI driver reads). Refused once the key is shredded."""
    asset = DataAsset.objects.select_related("tenant").get(volume=volume)
    if asset.state == AssetState.SHREDDED or asset.wrapped_key is None:
        raise Conflict("asset_shredded", "The volume's data key is destroyed: its content can never be read again.")
    return envelope.open_data_key(bytes(asset.wrapped_key), tenant_key(asset.tenant), asset.pk)


def volume_holds(*, volume: Volume) -> list[int]:
    """The active legal holds that cover the volume (its asset), by id."""
    asset = DataAsset.objects.filter(volume=volume).first()
    if asset is None:
        return []
    return list(holds_active([volume.tenant_id]).covering(volume.tenant_id, asset.category, asset.created_at))


def volume_delete_schedule(*, volume: Volume, actor: Actor, now: datetime) -> DataAsset | None:
    """A tenant's delete of a volume: refused under a legal hold (409 ``legal_hold``), else its asset starts the
    waiting period (the volume stops being mounted and billed now; ``assets_scheduled``). Under the tenant's lock,
    taken here (the caller's transaction holds it). None when its deletion had begun already."""
    lock_tenant(volume.tenant_id)
    asset = DataAsset.objects.filter(volume=volume).first()
    if asset is None or asset.state != AssetState.LIVE:
        return None
    held = holds_active([volume.tenant_id]).covering(volume.tenant_id, asset.category, asset.created_at)
    if held:
        raise LegalHoldActive(held)
    scheduled = assets_schedule(tenant=volume.tenant, assets=[asset], reason=ShredReason.DELETE, actor=actor, now=now)
    return scheduled[0] if scheduled else None


def volumes_in_scope(*, tenant: Tenant, scope: AssetScope) -> list[Volume]:
    """The tenant's volumes whose asset a hold's (or an erasure's) scope reaches and that are not shredded yet: what
    a hold over that scope preserves, in id order."""
    assets = scope.assets(tenant).filter(volume__isnull=False).exclude(state=AssetState.SHREDDED)
    return list(Volume.objects.filter(asset__in=assets).select_related("region").order_by("pk"))


def volume_deletions_resume(*, tenant: Tenant, actor: Actor, now: datetime) -> list[DataAsset]:
    """After a hold is released (tenant locked, the erasures it suspended already resumed): volumes whose deletion
    a hold stopped go on with it. A volume's deletion is never taken back (it stopped being mounted and billed when
    it began), so a volume still ``deleting`` whose asset a hold had put back to live is scheduled again, for the
    reason it was going, unless another hold still covers it."""
    stopped = list(
        DataAsset.objects.filter(tenant=tenant, state=AssetState.LIVE, volume__state=VolumeState.DELETING)
        .select_related("volume")
        .order_by("pk")
    )
    holds = holds_active([tenant.pk])
    free = [a for a in stopped if not holds.covering(tenant.pk, a.category, a.created_at)]
    by_reason: dict[str, list[DataAsset]] = {}
    for asset in free:
        # The volume recorded why its deletion began (``volume_deletion_begin``'s reason); a tenant's delete else.
        recorded = asset.volume.last_error if asset.volume is not None else ""
        reason = recorded if recorded in ShredReason.values else ShredReason.DELETE
        by_reason.setdefault(reason, []).append(asset)
    scheduled: list[DataAsset] = []
    for reason, group in sorted(by_reason.items()):
        scheduled += assets_schedule(tenant=tenant, assets=group, reason=reason, actor=actor, now=now)
    return scheduled
