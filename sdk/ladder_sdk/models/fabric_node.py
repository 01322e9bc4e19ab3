from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fabric_nic import FabricNic


T = TypeVar("T", bound="FabricNode")


@_attrs_define
class FabricNode:
    """
    Attributes:
        hostname (str):
        nics (list[FabricNic]):
    """

    hostname: str
    nics: list[FabricNic]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hostname = self.hostname

        nics = []
        for nics_item_data in self.nics:
            nics_item = nics_item_data.to_dict()
            nics.append(nics_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hostname": hostname,
                "nics": nics,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fabric_nic import FabricNic

        d = dict(src_dict)
        hostname = d.pop("hostname")

        nics = []
        _nics = d.pop("nics")
        for nics_item_data in _nics:
            nics_item = FabricNic.from_dict(nics_item_data)

            nics.append(nics_item)

        fabric_node = cls(
            hostname=hostname,
            nics=nics,
        )

        fabric_node.additional_properties = d
        return fabric_node

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
