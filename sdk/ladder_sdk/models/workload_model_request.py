from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="WorkloadModelRequest")


@_attrs_define
class WorkloadModelRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            size_gb (float): The weights' size in GB (an 8B model in fp16: 16).
            volume (int | Unset): One of this workload's volumes (in volumes, read-only): the model cache the weights are
                read from, its mount path in LADDER_MODEL_DIR. Without it the weights are downloaded at start.
    """

    size_gb: float
    volume: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        size_gb = self.size_gb

        volume = self.volume

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "size_gb": size_gb,
            }
        )
        if volume is not UNSET:
            field_dict["volume"] = volume

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        size_gb = d.pop("size_gb")

        volume = d.pop("volume", UNSET)

        workload_model_request = cls(
            size_gb=size_gb,
            volume=volume,
        )

        workload_model_request.additional_properties = d
        return workload_model_request

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
