from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="VolumeRequest")


@_attrs_define
class VolumeRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            mount_path (str):
            dataset (int | Unset): A data asset of yours, read-only.
            scratch_gb (int | Unset): An empty volume.
            volume (int | Unset): A volume of yours (/api/v1/volumes): it outlives the allocation.
            read_only (bool | Unset): Mount the volume read-only (always on serverless: many replicas read it at once).
    """

    mount_path: str
    dataset: int | Unset = UNSET
    scratch_gb: int | Unset = UNSET
    volume: int | Unset = UNSET
    read_only: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mount_path = self.mount_path

        dataset = self.dataset

        scratch_gb = self.scratch_gb

        volume = self.volume

        read_only = self.read_only

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mount_path": mount_path,
            }
        )
        if dataset is not UNSET:
            field_dict["dataset"] = dataset
        if scratch_gb is not UNSET:
            field_dict["scratch_gb"] = scratch_gb
        if volume is not UNSET:
            field_dict["volume"] = volume
        if read_only is not UNSET:
            field_dict["read_only"] = read_only

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        mount_path = d.pop("mount_path")

        dataset = d.pop("dataset", UNSET)

        scratch_gb = d.pop("scratch_gb", UNSET)

        volume = d.pop("volume", UNSET)

        read_only = d.pop("read_only", UNSET)

        volume_request = cls(
            mount_path=mount_path,
            dataset=dataset,
            scratch_gb=scratch_gb,
            volume=volume,
            read_only=read_only,
        )

        volume_request.additional_properties = d
        return volume_request

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
