"""Where a region's volumes live on Kubernetes, free of Django: the operator's StorageClass, VolumeSnapshotClass
and CSI credentials Secret for each region and kind of volume, written ``<region>/<kind>=<value>`` and separated
by commas (``LADDER_VOLUME_STORAGE_CLASSES``, ``LADDER_VOLUME_SNAPSHOT_CLASSES``, ``LADDER_VOLUME_CSI_CREDENTIALS``;
docs/volumes.md, "On Kubernetes (operators)").

A setting that cannot be read is refused when the settings load, naming the entry and what is wrong with it, so a
typo never shows up later as a volume stuck in ``creating``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from provisioning.domain.volumes import VolumeKind

_REGION = re.compile(r"^[A-Za-z0-9_-]+$")  # a region's code is a slug
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

Where = tuple[str, VolumeKind]  # (region code, kind)


class VolumeClassesInvalid(ValueError):
    """A setting of this module that cannot be read; the message names the setting and the entry."""


@dataclass(frozen=True)
class SecretRef:
    """A Secret in the cluster, by namespace and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _entries(text: str, setting: str) -> dict[Where, str]:
    found: dict[Where, str] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        where, sep, value = entry.partition("=")
        region, slash, kind = where.strip().partition("/")
        if not sep or not slash:
            raise VolumeClassesInvalid(
                f"{setting}: {entry!r} is not <region>/<kind>=<value> (e.g. eu-west/filesystem=cephfs-eu-west)."
            )
        region, kind, value = region.strip(), kind.strip(), value.strip()
        if not _REGION.match(region):
            raise VolumeClassesInvalid(f"{setting}: {entry!r}: {region!r} is not a region's code.")
        if kind not in {k.value for k in VolumeKind}:
            raise VolumeClassesInvalid(f"{setting}: {entry!r}: the kind is {' or '.join(VolumeKind)}, not {kind!r}.")
        key = (region, VolumeKind(kind))
        if key in found:
            raise VolumeClassesInvalid(f"{setting}: {region}/{kind} is given twice.")
        if not value:
            raise VolumeClassesInvalid(f"{setting}: {entry!r} names nothing after '='.")
        found[key] = value
    return found


def class_map(text: str, setting: str) -> dict[Where, str]:
    """A StorageClass or VolumeSnapshotClass per region and kind. Class names are DNS subdomains, as the API server
    requires of a cluster-scoped object's name."""
    found = _entries(text, setting)
    for (region, kind), name in found.items():
        if len(name) > 253 or not _SUBDOMAIN.match(name):
            raise VolumeClassesInvalid(
                f"{setting}: {region}/{kind}={name}: {name!r} is not a valid class name (lower-case letters, digits, "
                "'-' and '.', at most 253 characters)."
            )
    return found


def secret_map(text: str, setting: str) -> dict[Where, SecretRef]:
    """A Secret per region and kind, written ``<namespace>/<name>``."""
    found: dict[Where, SecretRef] = {}
    for (region, kind), value in _entries(text, setting).items():
        namespace, slash, name = value.partition("/")
        if not slash or not _LABEL.match(namespace) or len(namespace) > 63 or not _SUBDOMAIN.match(name):
            raise VolumeClassesInvalid(
                f"{setting}: {region}/{kind}={value}: a Secret is named <namespace>/<name> (e.g. "
                "ceph-csi-rbd/csi-rbd-secret)."
            )
        found[(region, kind)] = SecretRef(namespace, name)
    return found
