"""The Volumes page (``/portal/volumes``): the tenant's volumes with where each is attached, its snapshots and what
it costs a month; creating one, and on a volume's own page renaming or growing it, taking a snapshot, restoring a
ready snapshot into a new volume, and deleting it (or a snapshot) after a confirmation.

Every write goes through ``lifecycle.services.volumes``, the services ``/api/v1/volumes`` calls, so the same rules
refuse it in the same words (mounted, under a legal hold, over the quota, outside the residency, a name in use, a
restore smaller than its snapshot, a closing tenant)
and the same audit events are left. Every role reads; owners, admins and members manage (``Action.DATA_MANAGE``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from billing.domain.pricing import round_money
from billing.models import SkuPrice
from billing.selectors import storage_prices
from core.actor import Actor
from core.errors import ServiceError
from lifecycle.services.volumes import (
    volume_create,
    volume_delete,
    volume_grow,
    volume_rename,
    volume_snapshot_create,
    volume_snapshot_delete,
)
from portal import words
from portal.forms import (
    SnapshotForm,
    VolumeCreateForm,
    VolumeGrowForm,
    VolumeRenameForm,
    VolumeRestoreForm,
    error_onto,
)
from portal.views import member, regions_allowed
from provisioning.domain.volumes import ACCESS_MODES, HOURS_PER_MONTH, PROVISIONED, SnapshotState, VolumeState
from provisioning.models import Allocation, Volume, VolumeSnapshot
from provisioning.selectors import SNAPSHOT_CLASS, volumes_attached_to, volumes_counted_gb
from provisioning.services.volumes import region_of
from tenancy.domain.roles import Action, role_allows
from tenancy.models import Membership

GONE = (SnapshotState.DELETING, SnapshotState.DELETED)


def _may_manage(membership: Membership) -> bool:
    return role_allows(membership.role, Action.DATA_MANAGE)


def _volumes(membership: Membership) -> QuerySet[Volume]:
    """The tenant's volumes that are not deleted, by name."""
    return (
        Volume.objects.filter(tenant=membership.tenant)
        .exclude(state=VolumeState.DELETED)
        .select_related("region")
        .order_by("name", "pk")
    )


def _volume(membership: Membership, volume_id: int) -> Volume:
    return get_object_or_404(_volumes(membership), pk=volume_id)


def monthly(size_gb: int, price: SkuPrice | None) -> tuple[Decimal, str] | None:
    """What ``size_gb`` costs a storage month at ``price`` (per GB-hour), and its currency; None: not priced."""
    if price is None:
        return None
    currency = price.sku.currency
    return round_money(Decimal(size_gb) * price.unit_price_per_hour * HOURS_PER_MONTH, currency), currency.upper()


def _rows(membership: Membership, volumes: list[Volume]) -> list[dict[str, Any]]:
    """Each volume with the allocations that mount it (id and name), its snapshots, and its monthly cost at the
    storage prices in force now (its own, and its ready snapshots')."""
    prices = storage_prices(now=timezone.now())
    attached = volumes_attached_to([v.pk for v in volumes])
    names = dict(
        Allocation.objects.filter(
            tenant=membership.tenant, pk__in={a for ids in attached.values() for a in ids}
        ).values_list("pk", "name")
    )
    snapshots: dict[int, list[VolumeSnapshot]] = {v.pk: [] for v in volumes}
    for snapshot in VolumeSnapshot.objects.filter(volume__in=volumes).exclude(state=SnapshotState.DELETED):
        snapshots[snapshot.volume_id].append(snapshot)
    rows = []
    for v in volumes:
        kept = [s for s in snapshots[v.pk] if s.state == SnapshotState.READY]
        rows.append(
            {
                "volume": v,
                "state_words": words.VOLUME_STATES.get(v.state, ""),
                "access_mode": ACCESS_MODES[v.kind],  # type: ignore[index]
                "attached": [(a, names.get(a, "")) for a in attached[v.pk]],
                "snapshots": snapshots[v.pk],
                "billed": v.state in PROVISIONED or v.state == VolumeState.CREATING,
                "monthly": monthly(v.size_gb, prices.get((v.region.code, v.kind))),
                "snapshots_monthly": monthly(sum(s.size_gb for s in kept), prices.get((v.region.code, SNAPSHOT_CLASS)))
                if kept
                else None,
            }
        )
    return rows


def _table(membership: Membership) -> dict[str, Any]:
    rows = _rows(membership, list(_volumes(membership)))
    moving = any(
        r["volume"].state in (VolumeState.CREATING, VolumeState.DELETING)
        or any(s.state in (SnapshotState.CREATING, SnapshotState.DELETING) for s in r["snapshots"])
        for r in rows
    )
    return {"rows": rows, "moving": moving, "not_priced": words.NOT_PRICED}


def _create_form(membership: Membership, data: Any) -> VolumeCreateForm:
    return VolumeCreateForm(
        data, regions=regions_allowed(membership.tenant), kinds=words.VOLUME_KIND_CHOICES, auto_id="volume_%s"
    )


@member(Action.DATA_VIEW)
def volumes(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The tenant's volumes, and (owners, admins, members) a new one."""
    tenant = membership.tenant
    form = _create_form(membership, request.POST if request.method == "POST" else None)
    if request.method == "POST":
        if not _may_manage(membership):
            raise PermissionDenied(f"A {membership.role} may not create volumes.")
        if form.is_valid():
            data = form.cleaned_data
            try:
                made = volume_create(
                    tenant=tenant,
                    name=data["name"],
                    region=region_of(data["region"]),
                    kind=data["kind"],
                    size_gb=data["size_gb"],
                    actor=Actor.for_user(request.user),
                )
            except ServiceError as error:
                error_onto(form, error)
            else:
                messages.success(request, f"The volume {made.name} is made: {made.size_gb} GB in {data['region']}.")
                return redirect("portal:volumes")
    quota = tenant.volume_quota_gb
    context = {
        **_table(membership),
        "form": form,
        "manage": _may_manage(membership),
        "kinds": words.VOLUME_KINDS,
        "quota_gb": quota,
        "counted_gb": volumes_counted_gb([tenant.pk]).get(tenant.pk, 0),
    }
    return render(request, "portal/volumes.html", context, status=422 if form.errors else 200)


@member(Action.DATA_VIEW)
def volumes_fragment(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The table alone, which the page polls while a volume or snapshot is being made or deleted."""
    return render(request, "portal/_volumes.html", _table(membership))


@member(Action.DATA_VIEW)
def volume(request: HttpRequest, membership: Membership, volume_id: int) -> HttpResponse:
    """One volume: what it is and costs, who mounts it, its snapshots; rename or grow it, take a snapshot."""
    found = _volume(membership, volume_id)
    sent = request.POST.get("form") if request.method == "POST" else None
    rename = VolumeRenameForm(
        request.POST if sent == "rename" else None, initial={"name": found.name}, auto_id="rename_%s"
    )
    grow = VolumeGrowForm(request.POST if sent == "grow" else None, auto_id="grow_%s")
    snap = SnapshotForm(request.POST if sent == "snapshot" else None, auto_id="snapshot_%s")
    if sent in ("rename", "grow", "snapshot") and not _may_manage(membership):
        raise PermissionDenied(f"A {membership.role} may not change volumes.")
    actor = Actor.for_user(request.user)
    if sent == "rename" and rename.is_valid():
        was = found.name
        try:
            renamed = volume_rename(volume=found, name=rename.cleaned_data["name"], actor=actor)
        except ServiceError as error:
            error_onto(rename, error)
        else:
            messages.success(request, f"{was} is now named {renamed.name}.")
            return redirect("portal:volume", volume_id=found.pk)
    if sent == "grow" and grow.is_valid():
        try:
            grown = volume_grow(volume=found, size_gb=grow.cleaned_data["size_gb"], actor=actor)
        except ServiceError as error:
            error_onto(grow, error)
        else:
            messages.success(request, f"{grown.name} is now {grown.size_gb} GB.")
            return redirect("portal:volume", volume_id=found.pk)
    if sent == "snapshot" and snap.is_valid():
        try:
            taken = volume_snapshot_create(volume=found, name=snap.cleaned_data["name"], actor=actor)
        except ServiceError as error:
            error_onto(snap, error)
        else:
            messages.success(request, f"The snapshot {taken.name} of {found.name} is taken.")
            return redirect("portal:volume", volume_id=found.pk)
    [row] = _rows(membership, [found])
    context = {
        **row,
        "rename": rename,
        "grow": grow,
        "snap": snap,
        "manage": _may_manage(membership),
        "kind_words": words.VOLUME_KINDS.get(found.kind, ""),
        "not_priced": words.NOT_PRICED,
        "live": found.state not in (VolumeState.DELETING, VolumeState.DELETED),
    }
    status = 422 if rename.errors or grow.errors or snap.errors else 200
    return render(request, "portal/volume.html", context, status=status)


@member(Action.DATA_MANAGE)
def volume_delete_view(request: HttpRequest, membership: Membership, volume_id: int) -> HttpResponse:
    """Delete a volume after a confirmation; refused while mounted or under a legal hold, in the service's words."""
    found = _volume(membership, volume_id)
    refusal, status = None, 200
    if request.method == "POST":
        try:
            volume_delete(volume=found, actor=Actor.for_user(request.user))
        except ServiceError as error:
            refusal, status = error.detail, error.status
        else:
            messages.success(request, f"The volume {found.name} is being deleted; it is no longer billed.")
            return redirect("portal:volumes")
    [row] = _rows(membership, [found])
    context = {**row, "refusal": refusal, "wait_days": settings.LADDER_SHRED_WAIT_DAYS}
    return render(request, "portal/volume_delete.html", context, status=status)


@member(Action.DATA_MANAGE)
def snapshot_delete_view(
    request: HttpRequest, membership: Membership, volume_id: int, snapshot_id: int
) -> HttpResponse:
    """Delete one snapshot after a confirmation; refused under a legal hold over its volume."""
    found = _volume(membership, volume_id)
    snapshot = get_object_or_404(VolumeSnapshot.objects.filter(volume=found).exclude(state__in=GONE), pk=snapshot_id)
    refusal, status = None, 200
    if request.method == "POST":
        try:
            volume_snapshot_delete(snapshot=snapshot, actor=Actor.for_user(request.user))
        except ServiceError as error:
            refusal, status = error.detail, error.status
        else:
            messages.success(request, f"The snapshot {snapshot.name} is being deleted.")
            return redirect("portal:volume", volume_id=found.pk)
    context = {"volume": found, "snapshot": snapshot, "refusal": refusal}
    return render(request, "portal/snapshot_delete.html", context, status=status)


@member(Action.DATA_MANAGE)
def snapshot_restore_view(
    request: HttpRequest, membership: Membership, volume_id: int, snapshot_id: int
) -> HttpResponse:
    """A new volume from a ready snapshot, in the snapshot's region and of its volume's kind: a name and a size (at
    least the snapshot's), admitted as any new volume is (quota, budget, price, a closing tenant)."""
    found = _volume(membership, volume_id)
    snapshot = get_object_or_404(VolumeSnapshot.objects.filter(volume=found).exclude(state__in=GONE), pk=snapshot_id)
    form = VolumeRestoreForm(
        request.POST if request.method == "POST" else None,
        initial={"size_gb": snapshot.size_gb},
        auto_id="restore_%s",
    )
    if request.method == "POST" and form.is_valid():
        try:
            made = volume_create(
                tenant=membership.tenant,
                name=form.cleaned_data["name"],
                region=found.region,
                kind=found.kind,
                size_gb=form.cleaned_data["size_gb"],
                actor=Actor.for_user(request.user),
                snapshot=snapshot,
            )
        except ServiceError as error:
            error_onto(form, error)
        else:
            messages.success(
                request, f"The volume {made.name} is made from the snapshot {snapshot.name}: {made.size_gb} GB."
            )
            return redirect("portal:volume", volume_id=made.pk)
    prices = storage_prices(now=timezone.now())
    context = {
        "volume": found,
        "snapshot": snapshot,
        "form": form,
        "monthly": monthly(snapshot.size_gb, prices.get((found.region.code, found.kind))),
        "not_priced": words.NOT_PRICED,
    }
    return render(request, "portal/snapshot_restore.html", context, status=422 if form.errors else 200)
