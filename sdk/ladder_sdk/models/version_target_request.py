from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_model_enum import GpuModelEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="VersionTargetRequest")


@_attrs_define
class VersionTargetRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            gpu_model (GpuModelEnum): * `A100-40GB` - A100-40GB
                * `A100-80GB` - A100-80GB
                * `B200` - B200
                * `GB200` - GB200
                * `H100-NVL-94GB` - H100-NVL-94GB
                * `H100-SXM-80GB` - H100-SXM-80GB
                * `H200-141GB` - H200-141GB
            driver (str):
            cuda (str):
            nccl (str):
            firmware (str):
            reason (str | Unset): Kept in the audit log. Default: ''.
    """

    gpu_model: GpuModelEnum
    driver: str
    cuda: str
    nccl: str
    firmware: str
    reason: str | Unset = ""
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpu_model = self.gpu_model.value

        driver = self.driver

        cuda = self.cuda

        nccl = self.nccl

        firmware = self.firmware

        reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpu_model": gpu_model,
                "driver": driver,
                "cuda": cuda,
                "nccl": nccl,
                "firmware": firmware,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        gpu_model = GpuModelEnum(d.pop("gpu_model"))

        driver = d.pop("driver")

        cuda = d.pop("cuda")

        nccl = d.pop("nccl")

        firmware = d.pop("firmware")

        reason = d.pop("reason", UNSET)

        version_target_request = cls(
            gpu_model=gpu_model,
            driver=driver,
            cuda=cuda,
            nccl=nccl,
            firmware=firmware,
            reason=reason,
        )

        version_target_request.additional_properties = d
        return version_target_request

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
