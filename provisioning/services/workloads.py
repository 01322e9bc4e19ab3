"""Workloads as the drivers see them: the operator's rules from settings, a serverless endpoint's autoscaling as
applied, and the materials a workload names.

What a workload names lives in other apps (secret values in compliance, datasets in compliance, SSH keys in
tenancy). Provisioning does not reach up for them: the app that wires the apps together (``lifecycle``) hands in
one function, ``materials_source_set``, that resolves them for an allocation when a driver renders it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.conf import settings

from provisioning.domain.os_images import OsImage, os_catalog
from provisioning.domain.rungs import rung_facts
from provisioning.domain.volumes import VolumeKind
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES
from provisioning.domain.workloads import Autoscaling, Materials, MountedVolume, Workload, autoscaling_applied
from provisioning.models import Allocation, Volume
from provisioning.services.placing import AllocationSpec

# (allocation, workload) -> Materials; with ``released=True``, what a verified confidential guest is handed.
MaterialsSource = Callable[..., Materials]
_source: list[MaterialsSource] = []


def materials_source_set(source: MaterialsSource) -> None:
    """Install the one function that resolves what workloads name (``lifecycle`` does, when apps are ready)."""
    _source[:] = [source]


def workload_materials(allocation: Allocation, *, released: bool = False) -> Materials:
    """Secret values, pull credentials, SSH keys, dataset URLs and the OS image of the allocation's workload.

    For the confidential rung, what is rendered into the cluster holds no secret value and no dataset link: those
    are ``released`` only to the guest, after its attestation was verified (``attestation_release``)."""
    if not allocation.workload:
        return Materials()
    if not _source:
        raise LookupError("no materials source is installed (the lifecycle app installs it when Django starts)")
    workload = Workload.from_json(allocation.workload)
    return _source[0](allocation, workload, released=True) if released else _source[0](allocation, workload)


def mounted_volumes(allocation: Allocation, workload: Workload | None) -> dict[int, MountedVolume]:
    """The tenant's volumes the workload names, as a driver mounts them: how the rung takes each kind (the table of
    rungs), read-only when the entry or the rung says so, and the backend's name. A kind the rung does not take
    was refused at admission, and is left out here. No secret is read: a teardown and ``k8s_render`` use it too."""
    if workload is None or not workload.volume_ids:
        return {}
    facts = rung_facts(allocation.rung, workload.framework)
    entries = {v.volume: v for v in workload.volumes if v.volume is not None}
    return {
        volume.pk: MountedVolume(
            volume_id=volume.pk,
            kind=VolumeKind(volume.kind),
            attach=facts.volumes[VolumeKind(volume.kind)],
            read_only=entries[volume.pk].read_only or facts.volumes_read_only,
            backend_name=volume.backend_name,
            size_gb=volume.size_gb,
        )
        for volume in Volume.objects.filter(tenant_id=allocation.tenant_id, pk__in=list(entries))
        if VolumeKind(volume.kind) in facts.volumes
    }


def image_registries() -> tuple[str, ...]:
    return tuple(settings.LADDER_IMAGE_REGISTRIES) or DEFAULT_REGISTRIES


@lru_cache(maxsize=4)
def _catalog(configured: str) -> dict[str, OsImage]:
    return os_catalog(json.loads(configured) if configured else None)


def os_images() -> dict[str, OsImage]:
    """The operator's catalog of operating systems (LADDER_OS_IMAGES) or the default one."""
    return _catalog(settings.LADDER_OS_IMAGES)


def endpoint_autoscaling(allocation: Allocation) -> Autoscaling | None:
    """A serverless endpoint's autoscaling as applied: what its workload asked, the rest from the devices it is
    placed on (its shape, so the same while it is idle) and the operator's ``LADDER_SERVERLESS_IDLE_SECONDS``. None
    on the other rungs."""
    spec = allocation.workload_spec
    if not spec.facts.endpoint:
        return None
    asked = spec.workload.autoscaling if spec.workload is not None else None
    devices = AllocationSpec.from_json(allocation.spec).devices
    return autoscaling_applied(asked, devices=devices, idle_seconds=settings.LADDER_SERVERLESS_IDLE_SECONDS)


def workload_shown(allocation: Allocation) -> dict[str, Any] | None:
    """The workload as reads show it: as submitted (secrets by name only), with an endpoint's autoscaling filled in
    as it is applied (null on the other rungs, which take none)."""
    if not allocation.workload:
        return None
    autoscaling = endpoint_autoscaling(allocation)
    return {**allocation.workload, "autoscaling": autoscaling.to_json() if autoscaling is not None else None}
