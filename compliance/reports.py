"""The residency report: where a tenant's compute ran (from its allocation history) and where its data lives
(from the asset registry, a volume's asset among them), each place judged against the tenant's residency as it
stands now, through the same rules placement and asset registration use
(``provisioning.domain.placement.isolation``). Volumes are also listed one by one (name, kind, size, state): a
volume is usually the largest piece of a tenant's data in a place, and the one an officer asks about by name."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Min, Q, Sum

from compliance.models import AssetState, DataAsset
from provisioning.domain.placement.isolation import HallInfo, TenantPolicy, hall_allowed, region_allowed
from provisioning.domain.volumes import SnapshotState, VolumeState
from provisioning.models import Allocation, Hall, Region, Volume
from provisioning.selectors import region_info, tenant_policy
from tenancy.models import Tenant

EXAMPLES = 20  # ids listed per violating place: enough to start an investigation, bounded for big tenants


def residency_report(*, tenant: Tenant) -> dict[str, Any]:
    policy = tenant_policy(tenant)
    compute = []
    by_hall = (
        Allocation.objects.filter(tenant=tenant)
        .values("hall_id")
        .annotate(n=Count("pk"), first=Min("created_at"), last=Max("state_changed_at"))
        .order_by("hall_id")
    )
    halls = Hall.objects.select_related("region").in_bulk([row["hall_id"] for row in by_hall])
    for row in by_hall:
        hall = halls[row["hall_id"]]
        info = HallInfo(hall.code, hall.region.code, hall.region.jurisdiction, hall.fenced_for)
        refusal = hall_allowed(policy, info)
        entry = {
            "hall": hall.code,
            "region": hall.region.code,
            "jurisdiction": hall.region.jurisdiction,
            "fenced_for": hall.fenced_for,
            "allocations": row["n"],
            "first": row["first"],
            "last": row["last"],
            "violation": refusal.message if refusal else None,
        }
        if refusal:
            ids = Allocation.objects.filter(tenant=tenant, hall=hall).order_by("pk").values_list("pk", flat=True)
            entry["allocation_ids"] = list(ids[:EXAMPLES])
        compute.append(entry)
    data = []
    stored = DataAsset.objects.filter(tenant=tenant).exclude(state=AssetState.SHREDDED)
    by_region = stored.values("region_id").annotate(n=Count("pk"), size=Sum("size_bytes")).order_by("region_id")
    regions = Region.objects.in_bulk([place["region_id"] for place in by_region])
    for place in by_region:
        region = regions[place["region_id"]]
        refusal = region_allowed(policy, region_info(region))
        entry = {
            "region": region.code,
            "jurisdiction": region.jurisdiction,
            "assets": place["n"],
            "bytes": place["size"] or 0,
            "violation": refusal.message if refusal else None,
        }
        if refusal:
            entry["asset_ids"] = list(
                stored.filter(region=region).order_by("pk").values_list("pk", flat=True)[:EXAMPLES]
            )
        data.append(entry)
    volumes = _volumes(tenant, policy)
    violations = sum(1 for entry in (*compute, *data) if entry["violation"])
    return {
        "tenant": tenant.slug,
        "policy": {
            "regions": sorted(policy.regions) if policy.regions is not None else None,
            "jurisdictions": sorted(policy.jurisdictions) if policy.jurisdictions is not None else None,
            "sovereign": policy.sovereign,
        },
        "compute": compute,
        "data": data,
        "volumes": volumes,
        "violations": violations,
    }


def _volumes(tenant: Tenant, policy: TenantPolicy) -> list[dict[str, Any]]:
    """The tenant's volumes not yet deleted, each with its place and verdict (the verdict of its region, already
    counted among the data's places)."""
    rows = (
        Volume.objects.filter(tenant=tenant)
        .exclude(state=VolumeState.DELETED)
        .select_related("region")
        .annotate(live_snapshots=Count("snapshots", filter=~Q(snapshots__state=SnapshotState.DELETED)))
        .order_by("pk")
    )
    verdicts: dict[int, str | None] = {}
    listed = []
    for volume in rows:
        if volume.region_id not in verdicts:
            refusal = region_allowed(policy, region_info(volume.region))
            verdicts[volume.region_id] = refusal.message if refusal else None
        listed.append(
            {
                "id": volume.pk,
                "name": volume.name,
                "region": volume.region.code,
                "jurisdiction": volume.region.jurisdiction,
                "kind": volume.kind,
                "size_gb": volume.size_gb,
                "used_gb": volume.used_gb,
                "state": volume.state,
                "snapshots": volume.live_snapshots,
                "violation": verdicts[volume.region_id],
            }
        )
    return listed
