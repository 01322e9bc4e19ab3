"""The operator's volume classes per region and kind, read from settings: every well-formed entry read back, and
every mistake refused naming the setting and the entry."""

from __future__ import annotations

import pytest

from provisioning.domain.volume_classes import SecretRef, VolumeClassesInvalid, class_map, secret_map
from provisioning.domain.volumes import VolumeKind

SETTING = "LADDER_VOLUME_STORAGE_CLASSES"


def test_entries_are_read_per_region_and_kind() -> None:
    text = " eu-west/filesystem=ladder-cephfs-eu-west , eu-west/block=ladder-rbd-eu-west,us_east/block=rbd.us,"
    assert class_map(text, SETTING) == {
        ("eu-west", VolumeKind.FILESYSTEM): "ladder-cephfs-eu-west",
        ("eu-west", VolumeKind.BLOCK): "ladder-rbd-eu-west",
        ("us_east", VolumeKind.BLOCK): "rbd.us",
    }
    assert class_map("", SETTING) == {}
    refs = secret_map("eu-west/block=ceph-csi/csi-rbd-secret", "LADDER_VOLUME_CSI_CREDENTIALS")
    assert refs == {("eu-west", VolumeKind.BLOCK): SecretRef("ceph-csi", "csi-rbd-secret")}
    assert str(refs[("eu-west", VolumeKind.BLOCK)]) == "ceph-csi/csi-rbd-secret"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("eu-west=ladder-cephfs", "is not <region>/<kind>=<value>"),
        ("eu-west/filesystem", "is not <region>/<kind>=<value>"),
        ("eu west/block=x", "is not a region's code"),
        ("eu-west/tape=x", "the kind is filesystem or block, not 'tape'"),
        ("eu-west/block=", "names nothing after '='"),
        ("eu-west/block=a,eu-west/block=b", "eu-west/block is given twice"),
        ("eu-west/block=Not_A_Class", "is not a valid class name"),
        ("eu-west/block=" + "a" * 254, "is not a valid class name"),
    ],
)
def test_a_mistake_is_refused_naming_the_entry(text: str, says: str) -> None:
    with pytest.raises(VolumeClassesInvalid, match=SETTING) as refused:
        class_map(text, SETTING)
    assert says in str(refused.value)


@pytest.mark.parametrize("value", ["csi-rbd-secret", "Ceph/secret", "ceph-csi/", "ceph-csi/Bad_Name"])
def test_a_credentials_secret_is_a_namespace_and_a_name(value: str) -> None:
    with pytest.raises(VolumeClassesInvalid, match="a Secret is named <namespace>/<name>"):
        secret_map(f"eu-west/block={value}", "LADDER_VOLUME_CSI_CREDENTIALS")
