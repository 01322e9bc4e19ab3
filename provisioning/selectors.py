"""Reads that provisioning makes of other apps' data (a tenant's contract as the placement engine sees it), the
fleet's figures the metrics scrape reads, and an allocation's RDMA fabric as its API representation states it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count

from provisioning.fabric import FabricRefused, fabric_of
from provisioning.fleet_document import Rdma
from provisioning.models import Allocation, Cluster, Node
from provisioning.placement.isolation import Rung, TenantPolicy
from provisioning.states import TERMINAL, AllocationState
from tenancy.models import Tenant


def tenant_policy(tenant: Tenant) -> TenantPolicy:
    """The placement engine's view of a tenant's contract."""
    regions = tenant.residency_regions
    jurisdictions = tenant.residency_jurisdictions
    return TenantPolicy(
        tenant_id=tenant.pk,
        jurisdiction=next(iter(jurisdictions)) if tenant.sovereign and jurisdictions else None,
        regions=frozenset(regions) if regions is not None else None,
        jurisdictions=frozenset(jurisdictions) if jurisdictions is not None else None,
        sovereign=tenant.sovereign,
        dedicated_hardware=tenant.dedicated_hardware,
        allow_soft_sharing=tenant.allow_soft_sharing,
    )


def allocation_state_counts() -> dict[tuple[str, str], int]:
    """Allocations in each live state, by (state, rung): one GROUP BY over the ``(state, state_changed_at)`` index.
    Stopped and failed ones are left out: they only ever grow."""
    live = [state.value for state in AllocationState if state not in TERMINAL]
    rows = Allocation.objects.filter(state__in=live).order_by().values("state", "rung").annotate(n=Count("id"))
    return {(row["state"], row["rung"]): row["n"] for row in rows}


def clusters_reconciled() -> list[tuple[str, str, datetime | None]]:
    """Each registered cluster's name, health and when reconciliation last went round (one small table)."""
    return list(Cluster.objects.order_by("name").values_list("name", "health", "reconciled_at"))


FABRIC_RUNGS = (Rung.JOB, Rung.BARE_METAL)  # the rungs whose allocations span nodes


def allocation_fabric(allocation: Allocation) -> dict[str, Any] | None:
    """The RDMA fabric the allocation's nodes meet on, as ``provisioning.fabric.Fabric.as_json`` states it (the
    tenant's partition key or VLAN, the NICs per node); None unless it is a job or bare metal on two nodes or
    more, every one with RDMA NICs. Its devices now, else the ones it last held (as the devices it shows); a
    combination the driver refuses (``FabricRefused``) is none: the allocation fails with the reason."""
    if allocation.rung not in FABRIC_RUNGS:
        return None
    devices = list(allocation.devices.all())  # prefetched by the API's queryset
    hostnames = {d.hostname for d in [d for d in devices if d.active] or devices}
    if len(hostnames) < 2:
        return None
    rdma = dict(Node.objects.filter(hall_id=allocation.hall_id, hostname__in=hostnames).values_list("hostname", "rdma"))
    try:
        fabric = fabric_of([(h, Rdma.from_json(rdma.get(h))) for h in sorted(hostnames)], allocation.tenant_id)
    except FabricRefused:
        return None
    return fabric.as_json() if fabric is not None else None
