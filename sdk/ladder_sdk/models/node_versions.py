from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="NodeVersions")


@_attrs_define
class NodeVersions:
    """
    Attributes:
        driver (str):
        cuda (str):
        nccl (str):
        firmware (str):
    """

    driver: str
    cuda: str
    nccl: str
    firmware: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        driver = self.driver

        cuda = self.cuda

        nccl = self.nccl

        firmware = self.firmware

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "driver": driver,
                "cuda": cuda,
                "nccl": nccl,
                "firmware": firmware,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        driver = d.pop("driver")

        cuda = d.pop("cuda")

        nccl = d.pop("nccl")

        firmware = d.pop("firmware")

        node_versions = cls(
            driver=driver,
            cuda=cuda,
            nccl=nccl,
            firmware=firmware,
        )

        node_versions.additional_properties = d
        return node_versions

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
