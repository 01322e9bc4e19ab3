from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.volume_kind_enum import VolumeKindEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="VolumeCreateRequest")


@_attrs_define
class VolumeCreateRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str): A DNS label, 1 to 63 characters.
            region (str): Region code; the tenant's residency must allow it.
            kind (VolumeKindEnum): * `filesystem` - filesystem
                * `block` - block
            size_gb (int):
            snapshot (int | Unset): Restore from this ready snapshot of yours (same region and kind).
    """

    name: str
    region: str
    kind: VolumeKindEnum
    size_gb: int
    snapshot: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        region = self.region

        kind = self.kind.value

        size_gb = self.size_gb

        snapshot = self.snapshot

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "region": region,
                "kind": kind,
                "size_gb": size_gb,
            }
        )
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        region = d.pop("region")

        kind = VolumeKindEnum(d.pop("kind"))

        size_gb = d.pop("size_gb")

        snapshot = d.pop("snapshot", UNSET)

        volume_create_request = cls(
            name=name,
            region=region,
            kind=kind,
            size_gb=size_gb,
            snapshot=snapshot,
        )

        volume_create_request.additional_properties = d
        return volume_create_request

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
