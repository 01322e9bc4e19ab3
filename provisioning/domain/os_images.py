"""The operating systems an operator offers on the VM and bare-metal rungs: the built-in catalog and the
operator's own (``LADDER_OS_IMAGES``). A workload names one by ``os_image``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class OsImage:
    """An operating system an operator offers on the VM and bare-metal rungs."""

    name: str
    title: str
    user: str  # the login user cloud-init creates and SSH reaches
    vm_disk: str  # a KubeVirt containerDisk image
    metal_url: str  # a disk image Metal3's Ironic writes to the host
    metal_checksum: str  # "sha256:<hex>" of metal_url


# The default catalog; LADDER_OS_IMAGES (JSON: a list of these objects) replaces it.
OS_IMAGES: tuple[OsImage, ...] = (
    OsImage(
        name="ubuntu-24.04",
        title="Ubuntu 24.04 LTS",
        user="ubuntu",
        vm_disk="quay.io/containerdisks/ubuntu:24.04",
        metal_url="https://cloud-images.ubuntu.com/noble/current/noble-server-cloudimg-amd64.img",
        metal_checksum="https://cloud-images.ubuntu.com/noble/current/SHA256SUMS",
    ),
    OsImage(
        name="ubuntu-22.04",
        title="Ubuntu 22.04 LTS",
        user="ubuntu",
        vm_disk="quay.io/containerdisks/ubuntu:22.04",
        metal_url="https://cloud-images.ubuntu.com/jammy/current/jammy-server-cloudimg-amd64.img",
        metal_checksum="https://cloud-images.ubuntu.com/jammy/current/SHA256SUMS",
    ),
    OsImage(
        name="rocky-9",
        title="Rocky Linux 9",
        user="rocky",
        vm_disk="quay.io/containerdisks/rocky:9",
        metal_url="https://dl.rockylinux.org/pub/rocky/9/images/x86_64/Rocky-9-GenericCloud-Base.latest.x86_64.qcow2",
        metal_checksum="https://dl.rockylinux.org/pub/rocky/9/images/x86_64/CHECKSUM",
    ),
)
DEFAULT_OS_IMAGE = "ubuntu-24.04"


def os_catalog(configured: Iterable[Mapping[str, str]] | None = None) -> dict[str, OsImage]:
    """The catalog by name: the operator's (each entry the fields of ``OsImage``) or the default."""
    entries = [OsImage(**dict(e)) for e in configured] if configured else list(OS_IMAGES)
    return {e.name: e for e in entries}
