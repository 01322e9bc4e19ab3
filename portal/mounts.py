"""What the launch form offers to mount: the tenant's volumes of the kinds the rung takes (the table of rungs'
``RungFacts.volumes``: block volumes for VMs only), and whether the rung mounts everything read-only
(serverless). The rules themselves are the services' (``lifecycle.services.workloads``): a volume offered here may
still be refused there (a block volume another allocation holds), in the service's words."""

from __future__ import annotations

from typing import Any

from portal.forms import VolumeChoice
from provisioning.domain.rungs import rung_facts
from provisioning.domain.volumes import VolumeKind
from provisioning.selectors import volumes_attached_to, volumes_mountable
from tenancy.models import Tenant


def launch_volumes(tenant: Tenant, rung: str) -> dict[str, Any]:
    """The launch form's ``volumes`` and ``read_only`` for ``rung``."""
    facts = rung_facts(rung)
    found = volumes_mountable(tenant=tenant, kinds=[k.value for k in facts.volumes])
    held = volumes_attached_to([v.pk for v in found if v.kind == VolumeKind.BLOCK])
    choices = []
    for v in found:
        label = f"{v.name} ({v.kind}, {v.size_gb} GB, {v.region.code})"
        if held.get(v.pk):
            label += f", attached to allocation {', '.join(map(str, held[v.pk]))}"
        choices.append(VolumeChoice(id=v.pk, name=v.name, label=label))
    return {"volumes": choices, "read_only": facts.volumes_read_only}
