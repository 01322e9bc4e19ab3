from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Device")


@_attrs_define
class Device:
    """
    Attributes:
        node (str):
        gpu_index (int):
        gpu_uuid (str):
        mig_profile (None | str):
        share (None | str): Share of the GPU for soft sharing, as a decimal string.
        mig_start (int | None | Unset):
    """

    node: str
    gpu_index: int
    gpu_uuid: str
    mig_profile: None | str
    share: None | str
    mig_start: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        gpu_index = self.gpu_index

        gpu_uuid = self.gpu_uuid

        mig_profile: None | str
        mig_profile = self.mig_profile

        share: None | str
        share = self.share

        mig_start: int | None | Unset
        if isinstance(self.mig_start, Unset):
            mig_start = UNSET
        else:
            mig_start = self.mig_start

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "node": node,
                "gpu_index": gpu_index,
                "gpu_uuid": gpu_uuid,
                "mig_profile": mig_profile,
                "share": share,
            }
        )
        if mig_start is not UNSET:
            field_dict["mig_start"] = mig_start

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        node = d.pop("node")

        gpu_index = d.pop("gpu_index")

        gpu_uuid = d.pop("gpu_uuid")

        def _parse_mig_profile(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        mig_profile = _parse_mig_profile(d.pop("mig_profile"))

        def _parse_share(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        share = _parse_share(d.pop("share"))

        def _parse_mig_start(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        mig_start = _parse_mig_start(d.pop("mig_start", UNSET))

        device = cls(
            node=node,
            gpu_index=gpu_index,
            gpu_uuid=gpu_uuid,
            mig_profile=mig_profile,
            share=share,
            mig_start=mig_start,
        )

        device.additional_properties = d
        return device

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
