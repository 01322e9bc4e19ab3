from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FabricNic")


@_attrs_define
class FabricNic:
    """
    Attributes:
        device (str): The host's RDMA device (a pod sees a VF of it under another name).
        rail (int):
        gpus (list[int]): GPU indexes under its PCIe switch.
    """

    device: str
    rail: int
    gpus: list[int]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device = self.device

        rail = self.rail

        gpus = self.gpus

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device": device,
                "rail": rail,
                "gpus": gpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        device = d.pop("device")

        rail = d.pop("rail")

        gpus = cast(list[int], d.pop("gpus"))

        fabric_nic = cls(
            device=device,
            rail=rail,
            gpus=gpus,
        )

        fabric_nic.additional_properties = d
        return fabric_nic

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
