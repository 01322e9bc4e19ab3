"""Every write to a tenant's volumes, their snapshots and their attachments.

A volume is asked of the backend after the row commits (``volume_provision`` task), and its state moves only by
compare-and-swap (``volume_transition``) as the driver reports: ``creating`` -> ``available`` <-> ``attached`` ->
``deleting`` -> ``deleted``. Entering and leaving the provisioned states is announced (``provisioning.events``), so
billing meters GB-hours from the moment the backend holds the capacity until its deletion begins.

What may delete a volume (a tenant's delete, retention, an erasure request, account closure, and the legal holds
that beat them all) is compliance's: the workflow that spans the two is ``lifecycle.services.volumes``. Here,
``volume_deletion_begin`` stops the volume being mounted and billed, and ``volume_destroy`` (once its data key is
shredded) removes it from the backend.

Lock order: Tenant (``lock_tenant``: the quota and names are per tenant) -> Volume rows -> AuditChainHead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record, audit_record_many
from core.errors import Conflict, Invalid
from core.tasks import enqueue
from provisioning.domain.volumes import (
    MOUNTABLE,
    PROVISIONED,
    SnapshotState,
    VolumeKind,
    VolumeRuleBroken,
    VolumeState,
    grow_check,
    kind_check,
    name_check,
    size_check,
    snapshot_backend_name,
    volume_backend_name,
)
from provisioning.domain.workloads import Workload
from provisioning.events import (
    snapshot_provisioned,
    snapshot_unprovisioned,
    volume_provisioned,
    volume_resized,
    volume_unprovisioned,
)
from provisioning.models import Allocation, Region, Volume, VolumeAttachment, VolumeSnapshot
from provisioning.selectors import residency_refusal, volumes_counted_gb
from tenancy.locks import lock_tenant
from tenancy.models import Tenant
from tenancy.services import tenant_require_writable

PROVISION = "provisioning.tasks.volume_provision"
RESIZE = "provisioning.tasks.volume_resize"
DESTROY = "provisioning.tasks.volume_destroy"
SNAPSHOT = "provisioning.tasks.snapshot_provision"
SNAPSHOT_DESTROY = "provisioning.tasks.snapshot_destroy"

# Which moves exist; every other one is refused.
MOVES: dict[VolumeState, frozenset[VolumeState]] = {
    VolumeState.CREATING: frozenset({VolumeState.AVAILABLE, VolumeState.ATTACHED, VolumeState.DELETING}),
    VolumeState.AVAILABLE: frozenset({VolumeState.ATTACHED, VolumeState.DELETING}),
    VolumeState.ATTACHED: frozenset({VolumeState.AVAILABLE, VolumeState.DELETING}),
    VolumeState.DELETING: frozenset({VolumeState.DELETED}),
    VolumeState.DELETED: frozenset(),
}


# The volume's own data key in the clear, or None once it is destroyed. Keys are compliance's: the app that wires the
# apps together (``lifecycle``) hands in the one function that reads them, as it does the materials source.
VolumeKeySource = Callable[[Volume], bytes | None]
_key_source: list[VolumeKeySource] = []


def volume_key_source_set(source: VolumeKeySource) -> None:
    """Install the one function that reads a volume's data key (``lifecycle`` does, when apps are ready)."""
    _key_source[:] = [source]


def volume_key(volume: Volume) -> bytes | None:
    """The volume's data key, for the backend's per-volume encryption; None once it is destroyed (shredded): then
    nothing may be derived from it again, and the backend lets the volume go."""
    if not _key_source:
        raise LookupError("no volume key source is installed (the lifecycle app installs it when Django starts)")
    return _key_source[0](volume)


def _invalid(error: VolumeRuleBroken) -> Invalid:
    return Invalid("validation_error", error.message, field=error.field)


def _quota_check(tenant: Tenant, more_gb: int) -> None:
    """Under the tenant's lock: refuse what would take its volumes past its storage quota (409 ``quota``)."""
    if tenant.volume_quota_gb is None:
        return
    counted = volumes_counted_gb([tenant.pk]).get(tenant.pk, 0)
    if counted + more_gb > tenant.volume_quota_gb:
        raise Conflict(
            "quota",
            f"Your volumes would hold {counted + more_gb} GB, over your storage quota of {tenant.volume_quota_gb} GB "
            f"({counted} GB in use). Delete a volume, or ask for a larger quota.",
            field="size_gb",
            extra={"quota_gb": tenant.volume_quota_gb, "used_gb": counted},
        )


def residency_check(tenant: Tenant, region: Region) -> None:
    """Refuse a region outside the tenant's residency (409 ``residency``): a volume is the tenant's data."""
    refusal = residency_refusal(tenant, region)
    if refusal is not None:
        raise Conflict("residency", refusal, field="region")


def region_of(code: object) -> Region:
    region = Region.objects.filter(code=str(code)).first() if isinstance(code, str) and code else None
    if region is None:
        raise Invalid("validation_error", f"There is no region {code!r}.", field="region")
    return region


def _name_free(tenant: Tenant, name: str, *, but: int | None = None) -> None:
    taken = Volume.objects.filter(tenant=tenant, name=name).exclude(state=VolumeState.DELETED)
    if but is not None:
        taken = taken.exclude(pk=but)
    if taken.exists():
        raise Conflict("name_taken", f"You already have a volume named {name}.", field="name")


def volume_create(
    *,
    tenant: Tenant,
    name: str,
    region: Region,
    kind: str,
    size_gb: int,
    actor: Actor,
    restored_from: VolumeSnapshot | None = None,
    now: datetime | None = None,
) -> Volume:
    """A new volume in ``creating`` (restored from a ready snapshot of the tenant when given), asked of the backend
    after commit. Runs inside the caller's transaction when there is one (the volume's data key is made with it)."""
    try:
        name, kind_, size = name_check(name), kind_check(kind), size_check(size_gb)
    except VolumeRuleBroken as error:
        raise _invalid(error) from None
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(tenant.pk)
        tenant_require_writable(tenant, actor=actor)
        residency_check(tenant, region)
        if restored_from is not None:
            _restorable(restored_from, region=region, kind=kind_, size_gb=size)
        _name_free(tenant, name)
        _quota_check(tenant, size)
        volume = Volume.objects.create(
            tenant=tenant,
            name=name,
            region=region,
            kind=kind_,
            size_gb=size,
            provisioner=settings.LADDER_PROVISIONER,
            restored_from=restored_from,
            created_at=now,
            state_changed_at=now,
        )
        volume.backend_name = volume_backend_name(volume.pk)
        volume.save(update_fields=["backend_name"])
        audit_record(
            actor=actor,
            action="volume.created",
            target_type="volume",
            target_id=volume.pk,
            tenant=tenant,
            data={
                "name": name,
                "region": region.code,
                "kind": kind_,
                "size_gb": size,
                **({"restored_from": restored_from.pk} if restored_from is not None else {}),
            },
        )
        enqueue(PROVISION, volume.pk)
    return volume


def _restorable(snapshot: VolumeSnapshot, *, region: Region, kind: VolumeKind, size_gb: int) -> None:
    source = snapshot.volume
    if snapshot.state != SnapshotState.READY:
        raise Conflict("snapshot_not_ready", f"Snapshot {snapshot.pk} is {snapshot.state}: only a ready one restores.")
    if source.region_id != region.pk:
        raise Conflict(
            "residency",
            f"Snapshot {snapshot.pk} lives in {source.region.code}: it restores into a volume of that region only.",
            field="region",
        )
    if source.kind != kind:
        raise Invalid("validation_error", f"Snapshot {snapshot.pk} is of a {source.kind} volume.", field="kind")
    if size_gb < snapshot.size_gb:
        raise Invalid(
            "validation_error",
            f"Snapshot {snapshot.pk} holds {snapshot.size_gb} GB: the new volume needs at least that.",
            field="size_gb",
        )


def volume_grow(*, volume: Volume, size_gb: int, actor: Actor, now: datetime | None = None) -> Volume:
    """Grow a volume (never shrink it); the backend is asked after commit. A provisioned volume is billed at the
    new size from now."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(volume.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        volume = Volume.objects.select_for_update(no_key=True, of=("self",)).get(pk=volume.pk)
        if volume.state not in MOUNTABLE:
            raise Conflict("volume_state", f"Volume {volume.name} is {volume.state}: it no longer grows.")
        try:
            size = grow_check(volume.size_gb, size_gb)
        except VolumeRuleBroken as error:
            raise _invalid(error) from None
        _quota_check(tenant, size - volume.size_gb)
        before, volume.size_gb = volume.size_gb, size
        volume.save(update_fields=["size_gb"])
        if volume.state in PROVISIONED:
            volume_resized.send(sender=Volume, volume=volume, at=now)
        audit_record(
            actor=actor,
            action="volume.grown",
            target_type="volume",
            target_id=volume.pk,
            tenant=tenant,
            data={"size_gb": {"old": before, "new": size}},  # an update, as the audit log's changes read it
        )
        enqueue(RESIZE, volume.pk)
    return volume


def volume_rename(*, volume: Volume, name: str, actor: Actor) -> Volume:
    try:
        name = name_check(name)
    except VolumeRuleBroken as error:
        raise _invalid(error) from None
    with transaction.atomic():
        tenant = lock_tenant(volume.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        volume = Volume.objects.select_for_update(no_key=True, of=("self",)).get(pk=volume.pk)
        if volume.state == VolumeState.DELETED:
            raise Conflict("volume_state", "A deleted volume keeps the name it had.")
        if name == volume.name:
            return volume
        _name_free(tenant, name, but=volume.pk)
        before, volume.name = volume.name, name
        volume.save(update_fields=["name"])
        audit_record(
            actor=actor,
            action="volume.renamed",
            target_type="volume",
            target_id=volume.pk,
            tenant=tenant,
            data={"name": {"old": before, "new": name}},  # "from"/"to" would read as a change of state
        )
    return volume


def volume_transition(
    *, volume: Volume, to: VolumeState, actor: Actor, at: datetime | None = None, reason: str = ""
) -> bool:
    """Move a volume by compare-and-swap on its state; False when someone moved it first. Entering a provisioned
    state from outside them, or leaving them, is announced (billing meters it)."""
    current = VolumeState(volume.state)
    if to not in MOVES[current]:
        raise Conflict("volume_state", f"A volume cannot go from {current} to {to}.")
    now = at or timezone.now()
    with transaction.atomic():
        fields: dict[str, Any] = {"state": to, "state_changed_at": now}
        if reason:
            fields["last_error"] = reason[:500]
        if not Volume.objects.filter(pk=volume.pk, state=current).update(**fields):
            return False
        volume.refresh_from_db()
        if current not in PROVISIONED and to in PROVISIONED:
            volume_provisioned.send(sender=Volume, volume=volume, at=now)
        elif current in PROVISIONED and to not in PROVISIONED:
            volume_unprovisioned.send(sender=Volume, volume=volume, at=now)
        audit_record(
            actor=actor,
            action=f"volume.{to}",
            target_type="volume",
            target_id=volume.pk,
            tenant=volume.tenant,
            data={"from": current, "to": to, **({"reason": reason} if reason else {})},
        )
    return True


def volume_ready(*, volume: Volume, actor: Actor, at: datetime | None = None) -> bool:
    """The backend holds a ``creating`` volume now: ``attached`` if work placed meanwhile mounts it, else
    ``available``. What drivers call when the backend reports it ready."""
    mounted = VolumeAttachment.objects.filter(volume=volume, released_at=None).exists()
    to = VolumeState.ATTACHED if mounted else VolumeState.AVAILABLE
    return volume_transition(volume=volume, to=to, actor=actor, at=at)


def volume_deletion_begin(*, volume: Volume, actor: Actor, at: datetime, reason: str) -> bool:
    """Its deletion is scheduled (``reason``: delete, retention, erasure, closure): it is no longer mounted by new
    work nor billed, and neither are its snapshots (``deleting`` with it). The backend keeps the volume and its
    snapshots until its data key is shredded (``volume_destroy``): a legal hold placed during the waiting period
    preserves all of its data, snapshots included. False when it was already going."""
    if volume.state in (VolumeState.DELETING, VolumeState.DELETED):
        return False
    moved = volume_transition(volume=volume, to=VolumeState.DELETING, actor=actor, at=at, reason=reason)
    if moved:
        for snapshot in VolumeSnapshot.objects.filter(volume=volume).exclude(
            state__in=[SnapshotState.DELETING, SnapshotState.DELETED]
        ):
            snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETING, actor=actor, at=at)
    return moved


def volume_destroy(*, volume: Volume, actor: Actor) -> None:
    """Its data key is destroyed: remove the volume and its snapshots from the backend (after commit). The driver
    moves it to ``deleted`` once the backend has let it go."""
    if volume.state not in (VolumeState.DELETING, VolumeState.DELETED):
        volume_deletion_begin(volume=volume, actor=actor, at=timezone.now(), reason="shredded")
    enqueue(DESTROY, volume.pk)


# --- snapshots ------------------------------------------------------------------------------------------------


def snapshot_create(*, volume: Volume, name: str, actor: Actor, now: datetime | None = None) -> VolumeSnapshot:
    """A point-in-time copy of a provisioned volume, taken by the backend after commit."""
    try:
        name = name_check(name)
    except VolumeRuleBroken as error:
        raise _invalid(error) from None
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(volume.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        volume = Volume.objects.select_for_update(no_key=True, of=("self",)).get(pk=volume.pk)
        if volume.state not in PROVISIONED:
            raise Conflict("volume_state", f"Volume {volume.name} is {volume.state}: only a provisioned one snapshots.")
        if VolumeSnapshot.objects.filter(volume=volume, name=name).exclude(state=SnapshotState.DELETED).exists():
            raise Conflict("name_taken", f"Volume {volume.name} already has a snapshot named {name}.", field="name")
        snapshot = VolumeSnapshot.objects.create(
            tenant=tenant, volume=volume, name=name, size_gb=volume.size_gb, created_at=now, state_changed_at=now
        )
        snapshot.backend_name = snapshot_backend_name(snapshot.pk)
        snapshot.save(update_fields=["backend_name"])
        audit_record(
            actor=actor,
            action="volume_snapshot.created",
            target_type="volume_snapshot",
            target_id=snapshot.pk,
            tenant=tenant,
            data={"volume": volume.pk, "name": name, "size_gb": snapshot.size_gb},
        )
        enqueue(SNAPSHOT, snapshot.pk)
    return snapshot


def snapshot_transition(
    *, snapshot: VolumeSnapshot, to: SnapshotState, actor: Actor, at: datetime | None = None
) -> bool:
    """Compare-and-swap a snapshot's state; ``ready`` starts its billing, leaving it stops it."""
    now = at or timezone.now()
    current = SnapshotState(snapshot.state)
    with transaction.atomic():
        if not VolumeSnapshot.objects.filter(pk=snapshot.pk, state=current).update(state=to, state_changed_at=now):
            return False
        snapshot.refresh_from_db()
        if to == SnapshotState.READY:
            snapshot_provisioned.send(sender=VolumeSnapshot, snapshot=snapshot, at=now)
        elif current == SnapshotState.READY:
            snapshot_unprovisioned.send(sender=VolumeSnapshot, snapshot=snapshot, at=now)
        audit_record(
            actor=actor,
            action=f"volume_snapshot.{to}",
            target_type="volume_snapshot",
            target_id=snapshot.pk,
            tenant=snapshot.tenant,
            data={"from": current, "to": to, "volume": snapshot.volume_id},
        )
    return True


def _snapshot_deleting(snapshot: VolumeSnapshot, *, actor: Actor, at: datetime) -> bool:
    if snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETING, actor=actor, at=at):
        enqueue(SNAPSHOT_DESTROY, snapshot.pk)
        return True
    return False


def snapshot_delete(*, snapshot: VolumeSnapshot, actor: Actor, now: datetime | None = None) -> VolumeSnapshot:
    """A tenant's delete of one snapshot (holds are asked by the caller): removed from the backend after commit."""
    now = now or timezone.now()
    with transaction.atomic():
        tenant = lock_tenant(snapshot.tenant_id)
        tenant_require_writable(tenant, actor=actor)
        snapshot = VolumeSnapshot.objects.select_for_update(no_key=True, of=("self",)).get(pk=snapshot.pk)
        if snapshot.state in (SnapshotState.DELETING, SnapshotState.DELETED):
            return snapshot
        _snapshot_deleting(snapshot, actor=actor, at=now)
    snapshot.refresh_from_db()
    return snapshot


# --- attachments ----------------------------------------------------------------------------------------------


def attachments_create(
    *, allocation: Allocation, workload: Workload, actor: Actor, at: datetime
) -> list[VolumeAttachment]:
    """The allocation mounts the volumes its workload names: inside the placement section, so two requests for one
    block volume never both get it. A block volume mounted by work that has not ended is refused (409
    ``volume_in_use``); a volume going away is refused (409 ``volume_state``). Each mount is audited
    (``volume.attached``) on the volume."""
    entries = [(v.volume, v) for v in workload.volumes if v.volume is not None]
    if not entries:
        return []
    volumes = {
        v.pk: v
        for v in Volume.objects.select_for_update(no_key=True, of=("self",))
        .filter(tenant_id=allocation.tenant_id, pk__in=[volume_id for volume_id, _ in entries])
        .order_by("pk")
    }
    for i, entry in enumerate(workload.volumes):
        if entry.volume is None:
            continue
        volume = volumes.get(entry.volume)
        if volume is None:
            raise Invalid(
                "validation_error", f"You have no volume {entry.volume}.", field=f"workload.volumes.{i}.volume"
            )
        if volume.state not in MOUNTABLE:
            raise Conflict("volume_state", f"Volume {volume.name} is {volume.state}: it cannot be mounted.")
        if volume.kind == VolumeKind.BLOCK:
            holder = (
                VolumeAttachment.objects.filter(volume=volume, released_at=None)
                .values_list("allocation_id", flat=True)
                .first()
            )
            if holder is not None:
                raise Conflict(
                    "volume_in_use",
                    f"Block volume {volume.name} is attached to allocation {holder}: a block volume takes one "
                    "attachment. Stop that allocation first, or use a filesystem volume to share data.",
                    field=f"workload.volumes.{i}.volume",
                    extra={"volume": volume.pk, "allocation": holder},
                )
    rows = VolumeAttachment.objects.bulk_create(
        [
            VolumeAttachment(
                allocation=allocation,
                volume_id=volume_id,
                mount_path=e.mount_path,
                read_only=e.read_only,
                attached_at=at,
            )
            for volume_id, e in entries
        ]
    )
    Volume.objects.filter(pk__in=list(volumes), state=VolumeState.AVAILABLE).update(
        state=VolumeState.ATTACHED, state_changed_at=at
    )
    audit_record_many(
        actor=actor,
        action="volume.attached",
        target_type="volume",
        tenant=allocation.tenant,
        entries=[
            (
                row.volume_id,
                {
                    "allocation": allocation.pk,
                    "mount_path": row.mount_path,
                    "read_only": row.read_only,
                    # The state changes only with the first mount of an available volume.
                    **(
                        {"from": VolumeState.AVAILABLE, "to": VolumeState.ATTACHED}
                        if volumes[row.volume_id].state == VolumeState.AVAILABLE
                        else {}
                    ),
                },
            )
            for row in rows
        ],
    )
    return rows


def attachments_release(*, allocation: Allocation, actor: Actor, at: datetime) -> int:
    """The allocation ended: its volumes are free of it, and those no other live work mounts are ``available``.
    Each release is audited (``volume.detached``) on the volume."""
    held = list(
        VolumeAttachment.objects.filter(allocation=allocation, released_at=None).values_list("volume_id", flat=True)
    )
    if not held:
        return 0
    VolumeAttachment.objects.filter(allocation=allocation, released_at=None).update(released_at=at)
    still = set(
        VolumeAttachment.objects.filter(volume_id__in=held, released_at=None).values_list("volume_id", flat=True)
    )
    freed = set(
        Volume.objects.filter(pk__in=set(held) - still, state=VolumeState.ATTACHED).values_list("pk", flat=True)
    )
    Volume.objects.filter(pk__in=freed).update(state=VolumeState.AVAILABLE, state_changed_at=at)
    audit_record_many(
        actor=actor,
        action="volume.detached",
        target_type="volume",
        tenant=allocation.tenant,
        entries=[
            (
                volume_id,
                {
                    "allocation": allocation.pk,
                    **({"from": VolumeState.ATTACHED, "to": VolumeState.AVAILABLE} if volume_id in freed else {}),
                },
            )
            for volume_id in sorted(held)
        ],
    )
    return len(held)
