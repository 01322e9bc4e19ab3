from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="HeldVolume")


@_attrs_define
class HeldVolume:
    """A volume a hold preserves: it is not deleted, erased nor shredded while the hold is active.

    Attributes:
        id (int):
        name (str):
        region (str):
        kind (str):
        size_gb (int):
        state (str):
    """

    id: int
    name: str
    region: str
    kind: str
    size_gb: int
    state: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        region = self.region

        kind = self.kind

        size_gb = self.size_gb

        state = self.state

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "region": region,
                "kind": kind,
                "size_gb": size_gb,
                "state": state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        region = d.pop("region")

        kind = d.pop("kind")

        size_gb = d.pop("size_gb")

        state = d.pop("state")

        held_volume = cls(
            id=id,
            name=name,
            region=region,
            kind=kind,
            size_gb=size_gb,
            state=state,
        )

        held_volume.additional_properties = d
        return held_volume

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
