"""The rules of the two isolation axes (docs/design.md §3) and the tenant's policy they are checked against.

Performance isolation says how a GPU is shared; security isolation says what boundary separates tenants. The
product states both for every allocation and never sells a partition as a boundary: soft sharing (MPS,
time-slicing, fractional) never crosses tenants. Every rule returns reason codes instead of raising, so the
engine can explain a refusal and the API can name the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

# The axes, the rungs and what each rung offers are written in the table of rungs (``provisioning.domain.rungs``).
from provisioning.domain.rungs import RUNGS, Performance, Rung, Security

# Strength of the boundary between tenants, weakest first.
SECURITY_STRENGTH = {s: i for i, s in enumerate(Security)}


class Reason(StrEnum):
    """Machine-readable refusal codes (the API's problem ``code``)."""

    INVALID_ISOLATION = "invalid_isolation"
    ISOLATION_POLICY = "isolation_policy"
    RESIDENCY = "residency"
    NO_CAPACITY = "no_capacity"
    QUOTA = "quota"
    VERSION_SKEW = "version_skew"
    FABRIC_SPLIT = "fabric_split"
    CC_TEE_UNKNOWN = "cc_tee_unknown"
    NOT_PRICED = "not_priced"  # nothing runs without a price (docs/billing.md, "Nothing runs without a price")
    RESERVATION = "reservation"  # reserved work beyond its reservation's room, or on one the tenant does not hold


@dataclass(frozen=True)
class Refusal:
    code: Reason
    message: str  # a sentence a customer understands
    sku: str | None = None  # not_priced: the SKU that has no price


@dataclass(frozen=True)
class TenantPolicy:
    """What a tenant's contract allows. ``None`` region/jurisdiction sets mean "anywhere"."""

    tenant_id: int
    jurisdiction: str | None = None  # the tenant's home jurisdiction, for sovereign tenants
    regions: frozenset[str] | None = None
    jurisdictions: frozenset[str] | None = None
    sovereign: bool = False
    dedicated_hardware: bool = False
    allow_soft_sharing: bool = True  # within the tenant only; never across tenants (rule 1)
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HallInfo:
    code: str
    region: str
    jurisdiction: str
    fenced_for: str | None


# --- rule 5: what the rung offers ------------------------------------------------------------------------------


def check_rung(rung: Rung, performance: Performance) -> Refusal | None:
    offer = RUNGS[rung]
    if performance in offer.performance:
        return None
    offered = ", ".join(sorted(offer.performance))
    return Refusal(
        Reason.INVALID_ISOLATION,
        f"The {rung} rung offers {offered} performance isolation, not {performance}.",
    )


# --- residency and fences --------------------------------------------------------------------------------------


def _area_allowed(policy: TenantPolicy, region: str, jurisdiction: str) -> Refusal | None:
    if policy.regions is not None and region not in policy.regions:
        return Refusal(Reason.RESIDENCY, f"Region {region} is outside the tenant's allowed regions.")
    if policy.jurisdictions is not None and jurisdiction not in policy.jurisdictions:
        return Refusal(Reason.RESIDENCY, f"Jurisdiction {jurisdiction} is outside the tenant's allowed ones.")
    return None


def hall_allowed(policy: TenantPolicy, hall: HallInfo) -> Refusal | None:
    """Residency: the tenant's regions and jurisdictions; fences: a fenced hall serves only sovereign tenants of
    its jurisdiction, and a sovereign tenant uses only halls fenced for its jurisdiction."""
    refusal = _area_allowed(policy, hall.region, hall.jurisdiction)
    if refusal is not None:
        return refusal
    if policy.sovereign:
        if hall.fenced_for is None or hall.fenced_for != policy.jurisdiction:
            return Refusal(Reason.RESIDENCY, f"Hall {hall.code} is not fenced for the tenant's sovereign jurisdiction.")
    elif hall.fenced_for is not None:
        return Refusal(Reason.RESIDENCY, f"Hall {hall.code} is fenced for sovereign {hall.fenced_for} tenants.")
    return None


@dataclass(frozen=True)
class RegionInfo:
    """Where data is stored: a region, its jurisdiction, and the jurisdictions its fenced halls serve."""

    code: str
    jurisdiction: str
    fenced_for: frozenset[str] = frozenset()


def region_allowed(policy: TenantPolicy, region: RegionInfo) -> Refusal | None:
    """Residency of stored data: the same regions and jurisdictions as compute; a sovereign tenant's data stays in
    a region with a hall fenced for its jurisdiction (its storage lives behind that fence)."""
    refusal = _area_allowed(policy, region.code, region.jurisdiction)
    if refusal is not None:
        return refusal
    if policy.sovereign and policy.jurisdiction not in region.fenced_for:
        return Refusal(
            Reason.RESIDENCY, f"Region {region.code} has no hall fenced for the tenant's sovereign jurisdiction."
        )
    return None


# --- rules 1 and 2: who may share a GPU ------------------------------------------------------------------------


def may_join_soft_gpu(policy: TenantPolicy, gpu_soft_tenant: int | None) -> Refusal | None:
    """Rule 1: a soft-shared GPU holds one tenant's workloads only."""
    if not policy.allow_soft_sharing:
        return Refusal(Reason.ISOLATION_POLICY, "The tenant's policy does not allow soft sharing of a GPU.")
    if gpu_soft_tenant is not None and gpu_soft_tenant != policy.tenant_id:
        return Refusal(Reason.ISOLATION_POLICY, "Soft sharing never crosses tenants.")
    return None


def may_join_mig_gpu(
    policy: TenantPolicy, security: Security, other_tenants: bool, dedicated_holder: int | None
) -> Refusal | None:
    """Rule 2: MIG slices of one GPU go to different tenants only at container security or stronger, and never
    where a tenant with dedicated hardware holds (or asks for) a slice."""
    if not other_tenants:
        return None
    if SECURITY_STRENGTH[security] < SECURITY_STRENGTH[Security.CONTAINER]:
        return Refusal(Reason.ISOLATION_POLICY, "MIG slices are shared across tenants only at container security.")
    if policy.dedicated_hardware:
        return Refusal(Reason.ISOLATION_POLICY, "The tenant's policy demands hardware no other tenant uses.")
    if dedicated_holder is not None and dedicated_holder != policy.tenant_id:
        return Refusal(Reason.ISOLATION_POLICY, "This GPU is dedicated to another tenant.")
    return None
