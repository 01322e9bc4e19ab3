from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="QuotaRequest")


@_attrs_define
class QuotaRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            gpus (None | str): GPUs the tenant may hold at once (a MIG slice counts its compute share); null lifts the
                quota.
            endpoint_calls_per_minute (int | None | Unset): Calls a minute each of the tenant's endpoints and public ports
                takes (the gateway's check, the endpoint's URL), counted per endpoint; null: the default
                (LADDER_ENDPOINT_CALLS_PER_MINUTE); left out: unchanged. Answered with the limit in force.
            volume_gb (int | None | Unset): GB the tenant's volumes may hold (provisioned size); null lifts the quota; left
                out: unchanged.
    """

    gpus: None | str
    endpoint_calls_per_minute: int | None | Unset = UNSET
    volume_gb: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpus: None | str
        gpus = self.gpus

        endpoint_calls_per_minute: int | None | Unset
        if isinstance(self.endpoint_calls_per_minute, Unset):
            endpoint_calls_per_minute = UNSET
        else:
            endpoint_calls_per_minute = self.endpoint_calls_per_minute

        volume_gb: int | None | Unset
        if isinstance(self.volume_gb, Unset):
            volume_gb = UNSET
        else:
            volume_gb = self.volume_gb

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpus": gpus,
            }
        )
        if endpoint_calls_per_minute is not UNSET:
            field_dict["endpoint_calls_per_minute"] = endpoint_calls_per_minute
        if volume_gb is not UNSET:
            field_dict["volume_gb"] = volume_gb

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_gpus(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        gpus = _parse_gpus(d.pop("gpus"))

        def _parse_endpoint_calls_per_minute(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        endpoint_calls_per_minute = _parse_endpoint_calls_per_minute(d.pop("endpoint_calls_per_minute", UNSET))

        def _parse_volume_gb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        volume_gb = _parse_volume_gb(d.pop("volume_gb", UNSET))

        quota_request = cls(
            gpus=gpus,
            endpoint_calls_per_minute=endpoint_calls_per_minute,
            volume_gb=volume_gb,
        )

        quota_request.additional_properties = d
        return quota_request

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
