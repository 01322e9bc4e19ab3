"""Workloads as the drivers see them: the operator's rules from settings, and the materials a workload names.

What a workload names lives in other apps (secret values in compliance, datasets in compliance, SSH keys in
tenancy). Provisioning does not reach up for them: the app that wires the apps together (``lifecycle``) hands in
one function, ``materials_source_set``, that resolves them for an allocation when a driver renders it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings

from provisioning.domain.os_images import OsImage, os_catalog
from provisioning.domain.workload_rules import DEFAULT_REGISTRIES
from provisioning.domain.workloads import Materials, Workload
from provisioning.models import Allocation

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


def image_registries() -> tuple[str, ...]:
    return tuple(settings.LADDER_IMAGE_REGISTRIES) or DEFAULT_REGISTRIES


@lru_cache(maxsize=4)
def _catalog(configured: str) -> dict[str, OsImage]:
    return os_catalog(json.loads(configured) if configured else None)


def os_images() -> dict[str, OsImage]:
    """The operator's catalog of operating systems (LADDER_OS_IMAGES) or the default one."""
    return _catalog(settings.LADDER_OS_IMAGES)
