"""Small in-memory fleets for the placement engine's tests and properties."""

from provisioning.domain.placement.isolation import HallInfo, TenantPolicy
from provisioning.domain.placement.state import FleetState

VERSIONS = ("580.65", "13.0", "2.27", "96.00")
OLD = ("570.10", "12.8", "2.21", "95.00")


def fleet(*, h100_nodes=4, h200_nodes=2, fenced_nodes=2, us_nodes=2, cc_nodes=1, per_domain=2, skewed=()):
    """EU hall eu-west-1a (H100 and H200), fenced EU hall eu-west-1b, US hall us-east-1a; 8 GPUs per node."""
    state = FleetState()
    state.add_hall(HallInfo("eu-west-1a", "eu-west", "EU", None))
    state.add_hall(HallInfo("eu-west-1b", "eu-west", "EU", "EU"))
    state.add_hall(HallInfo("us-east-1a", "us-east", "US", None))
    next_id = iter(range(1, 10_000))
    layout = [
        ("eu-west-1a", "H100-SXM-80GB", h100_nodes, False),
        ("eu-west-1a", "H200-141GB", h200_nodes, False),
        ("eu-west-1b", "H100-SXM-80GB", fenced_nodes, False),
        ("us-east-1a", "H100-SXM-80GB", us_nodes, False),
        ("eu-west-1a", "H100-SXM-80GB", cc_nodes, True),
    ]
    for hall, model, count, cc in layout:
        for i in range(count):
            node_id = next(next_id)
            hostname = f"{hall}-{model[:4].lower()}-{'cc' if cc else 'n'}{i}"
            state.add_node(
                id=node_id,
                hostname=hostname,
                hall=hall,
                model=model,
                gpu_uuids=[f"GPU-{node_id}-{g}" for g in range(8)],
                nvlink_domain=f"{hall}/{model}/{'cc' if cc else 'nvl'}-{i // per_domain}",
                versions=OLD if hostname in skewed else VERSIONS,
                cc_capable=cc,
                cc_mode=cc,
                cpu_tee="snp" if cc else None,
            )
    return state


def policy(tenant_id, **kwargs):
    return TenantPolicy(tenant_id=tenant_id, **kwargs)
