from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_mode_enum import GpuModeEnum

T = TypeVar("T", bound="Gpu")


@_attrs_define
class Gpu:
    """
    Attributes:
        index (int):
        uuid (str):
        mode (GpuModeEnum): * `whole` - Whole
            * `mig` - Mig
            * `shared` - Shared
    """

    index: int
    uuid: str
    mode: GpuModeEnum
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index = self.index

        uuid = self.uuid

        mode = self.mode.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "uuid": uuid,
                "mode": mode,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        index = d.pop("index")

        uuid = d.pop("uuid")

        mode = GpuModeEnum(d.pop("mode"))

        gpu = cls(
            index=index,
            uuid=uuid,
            mode=mode,
        )

        gpu.additional_properties = d
        return gpu

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
