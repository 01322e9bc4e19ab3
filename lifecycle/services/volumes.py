"""A tenant's volumes across the apps: provisioning keeps the volume, compliance its data key and governance,
billing refuses new storage once a budget's hard stop is reached, and storage that has no price.

- ``volume_create`` / ``volume_restore``: admission (standing, budget: a hard stop refuses new storage, it never
  deletes any; a storage kind and region without a price in effect: 409 ``not_priced``), then the volume and its
  asset (its own data key) in one transaction.
- ``volume_grow`` / ``volume_rename``: the volume and its asset together (growth is admitted as new storage is).
- ``volume_delete``: refused while mounted (409 ``volume_in_use``) or under a legal hold (409 ``legal_hold``); else
  the asset starts its waiting period, the volume stops being mounted and billed, and once the key is shredded the
  backend volume goes (``lifecycle.receivers``).
- ``volume_snapshot_create`` / ``volume_snapshot_delete``: a snapshot is under its volume's key and holds.
- ``volumes_described`` / ``volumes_closure_notice``: what account closure tells a leaving tenant about its
  volumes, in the export bundle and in the notice it sends (``lifecycle.services.closure``).
- ``volume_key_read``: a volume's data key for the backend's per-volume encryption, None once shredded (installed in
  ``lifecycle/apps.py`` as provisioning's volume key source).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from billing.models import StorageKind
from billing.selectors import storage_price_at, storage_sku_code
from billing.services.accounts import PaymentRequired, admission_check
from compliance.models import DataAsset
from compliance.services.assets import LegalHoldActive
from compliance.services.volumes import (
    volume_asset_create,
    volume_asset_update,
    volume_data_key,
    volume_delete_schedule,
    volume_holds,
)
from core.actor import Actor
from core.errors import Conflict
from provisioning.domain.volumes import MOUNTABLE, SnapshotState, VolumeState
from provisioning.models import Region, Volume, VolumeSnapshot
from provisioning.selectors import volumes_attached_to
from provisioning.services import volumes as provisioning
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable


def _admit(
    tenant: Tenant, what: str, actor: Actor, *, region: Region, storage_kind: str, now: datetime | None = None
) -> None:
    """New storage is bought like new capacity: refused while suspended, closing, or over a hard-stop budget (402
    ``budget_exceeded``), and where it has no price (409 ``not_priced``). The volumes a tenant has are never
    touched by it: a budget stops work, never deletes data. A closing tenant's member is refused first, in the words
    every other change is refused in (``tenant_require_writable``)."""
    tenant_require_writable(tenant, actor=actor)
    now = now or timezone.now()
    try:
        admission_check(tenant=tenant, now=now)
    except PaymentRequired as error:
        if error.code != "budget_exceeded":
            raise
        raise PaymentRequired(
            error.code, f"{error.detail} {what} is refused; your volumes and their data are kept.", extra=error.extra
        ) from None
    _priced(region, storage_kind, now)


def _priced(region: Region, storage_kind: str, now: datetime) -> None:
    """Nothing is stored without a price, as nothing runs without one: a storage kind (filesystem, block,
    snapshot) with no price in effect in the region is refused 409 ``not_priced``, naming its SKU. A kind that is
    not one is left to provisioning's check (422 naming ``kind``)."""
    if storage_kind not in StorageKind.values:
        return
    if storage_price_at(region_code=region.code, storage_kind=storage_kind, at=now) is not None:
        return
    sku = storage_sku_code(storage_kind=storage_kind, region_code=region.code)
    raise Conflict(
        "not_priced",
        f"{storage_kind.capitalize()} storage in {region.code} has no price yet ({sku}): it cannot be bought there "
        "until an operator prices it.",
        field="region",
        extra={"sku": sku},
    )


def volume_create(
    *,
    tenant: Tenant,
    name: str,
    region: Region,
    kind: str,
    size_gb: int,
    actor: Actor,
    snapshot: VolumeSnapshot | None = None,
    now: datetime | None = None,
) -> Volume:
    """A new volume (restored from ``snapshot`` when given) with its own data key; it is ``creating`` until the
    backend has it."""
    now = now or timezone.now()
    _admit(tenant, "A new volume", actor, region=region, storage_kind=kind, now=now)
    with transaction.atomic():
        volume = provisioning.volume_create(
            tenant=tenant,
            name=name,
            region=region,
            kind=kind,
            size_gb=size_gb,
            actor=actor,
            restored_from=snapshot,
            now=now,
        )
        volume_asset_create(volume=volume, actor=actor, now=now)
    return volume


def volume_grow(*, volume: Volume, size_gb: int, actor: Actor, now: datetime | None = None) -> Volume:
    now = now or timezone.now()
    _admit(volume.tenant, "Growing a volume", actor, region=volume.region, storage_kind=volume.kind, now=now)
    with transaction.atomic():
        volume = provisioning.volume_grow(volume=volume, size_gb=size_gb, actor=actor, now=now)
        volume_asset_update(volume=volume)
    return volume


def volume_rename(*, volume: Volume, name: str, actor: Actor) -> Volume:
    with transaction.atomic():
        volume = provisioning.volume_rename(volume=volume, name=name, actor=actor)
        volume_asset_update(volume=volume)
    return volume


def volume_delete(*, volume: Volume, actor: Actor, now: datetime | None = None) -> Volume:
    """Delete a volume and its snapshots. Mounted by work that has not ended: 409 ``volume_in_use``; under a legal
    hold: 409 ``legal_hold``. Deleting one already going changes nothing."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(volume.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        # Locked as a placement locks the volumes it mounts: no work attaches it between the look and the delete.
        volume = (
            Volume.objects.select_for_update(no_key=True, of=("self",))
            .select_related("tenant", "region")
            .get(pk=volume.pk)
        )
        holders = volumes_attached_to([volume.pk])[volume.pk]
        if holders and volume.state in MOUNTABLE:
            raise Conflict(
                "volume_in_use",
                f"Volume {volume.name} is mounted by allocation {', '.join(map(str, holders))}: stop it first.",
                extra={"allocations": holders},
            )
        volume_delete_schedule(volume=volume, actor=actor, now=now)
    volume.refresh_from_db()
    return volume


def volume_snapshot_create(*, volume: Volume, name: str, actor: Actor, now: datetime | None = None) -> VolumeSnapshot:
    """A snapshot is storage of its own (billed by the GB-hour on the region's snapshot SKU), admitted as a volume
    is."""
    now = now or timezone.now()
    _admit(volume.tenant, "A new snapshot", actor, region=volume.region, storage_kind=StorageKind.SNAPSHOT, now=now)
    return provisioning.snapshot_create(volume=volume, name=name, actor=actor, now=now)


def volume_snapshot_delete(*, snapshot: VolumeSnapshot, actor: Actor) -> VolumeSnapshot:
    """A snapshot holds its volume's data: a legal hold over the volume keeps it too (409 ``legal_hold``)."""
    held = volume_holds(volume=snapshot.volume)
    if held:
        raise LegalHoldActive(held)
    return provisioning.snapshot_delete(snapshot=snapshot, actor=actor)


# --- what closure tells a leaving tenant -----------------------------------------------------------------------


def volumes_described(tenant: Tenant) -> list[dict[str, Any]]:
    """The tenant's volumes not deleted, as the closure export bundle and notice list them: name, region, kind,
    size, what the backend last saw in use, state, and their snapshots (which go with them)."""
    volumes = Volume.objects.filter(tenant=tenant).exclude(state=VolumeState.DELETED).select_related("region")
    snapshots: dict[int, list[dict[str, Any]]] = {}
    for snapshot in (
        VolumeSnapshot.objects.filter(volume__in=volumes).exclude(state=SnapshotState.DELETED).order_by("pk")
    ):
        snapshots.setdefault(snapshot.volume_id, []).append(
            {
                "id": snapshot.pk,
                "name": snapshot.name,
                "size_gb": snapshot.size_gb,
                "state": snapshot.state,
                "created_at": snapshot.created_at.isoformat(),
            }
        )
    return [
        {
            "id": volume.pk,
            "name": volume.name,
            "region": volume.region.code,
            "kind": volume.kind,
            "size_gb": volume.size_gb,
            "used_gb": volume.used_gb,
            "state": volume.state,
            "created_at": volume.created_at.isoformat(),
            "snapshots": snapshots.get(volume.pk, []),
        }
        for volume in volumes.order_by("pk")
    ]


def volumes_closure_notice(*, count: int, closes_at: datetime, exact: bool) -> str:
    """What a leaving tenant is told about its volumes once the closure began. Their data is not in the export
    bundle (a volume holds terabytes; the bundle is one file): it stays on the backend, mounted by nothing and
    unbilled, until the account closes, when each volume's data key is destroyed and then the volume. A closing
    account runs no work, so the time to copy a volume's data out is before asking to close (the close page and
    docs/volumes.md say so first); this notice says plainly what is left rather than promise a way out the product
    does not have. ``exact``: ``closes_at`` is the closure's own, else the earliest it can be."""
    when = f"{closes_at:%Y-%m-%d %H:%M} UTC"
    if not exact:
        when = f"the account closes (not before {when})"
    plural = count != 1
    return (
        f"{count} volume{'s' if plural else ''} of yours {'are' if plural else 'is'} listed here; "
        f"{'their' if plural else 'its'} data is not in this export. "
        f"{'They are' if plural else 'It is'} kept, mounted by nothing and no longer billed, until {when}; then "
        "each volume's data key is destroyed, then the volume and its snapshots, and no one can read that data "
        "again. A closing account runs no work, so nothing can mount a volume to copy its data out any more: what "
        "was not copied out before the closure began is lost with the account, unless a legal hold preserves it."
    )


# --- the backend's per-volume encryption ------------------------------------------------------------------------


def volume_key_read(volume: Volume) -> bytes | None:
    """The volume's data key in the clear; None once it is shredded (the one refusal ``volume_data_key`` makes),
    or when the volume has no asset, hence no key, at all."""
    try:
        return volume_data_key(volume=volume)
    except DataAsset.DoesNotExist:
        return None
    except Conflict as error:
        if error.code != "asset_shredded":
            raise
        return None
