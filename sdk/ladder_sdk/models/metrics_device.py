from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.scope_enum import ScopeEnum

T = TypeVar("T", bound="MetricsDevice")


@_attrs_define
class MetricsDevice:
    """
    Attributes:
        key (str): The device's name in `metrics`: its UUID, and /<GPU instance> for MIG.
        scope (ScopeEnum): * `device` - device
            * `gpu` - gpu
        hostname (str):
        gpu_index (int):
        uuid (str):
        mig_profile (None | str):
        gpu_instance (int | None):
        share_milli (int | None):
        held_since (datetime.datetime):
        released_at (datetime.datetime | None):
    """

    key: str
    scope: ScopeEnum
    hostname: str
    gpu_index: int
    uuid: str
    mig_profile: None | str
    gpu_instance: int | None
    share_milli: int | None
    held_since: datetime.datetime
    released_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        scope = self.scope.value

        hostname = self.hostname

        gpu_index = self.gpu_index

        uuid = self.uuid

        mig_profile: None | str
        mig_profile = self.mig_profile

        gpu_instance: int | None
        gpu_instance = self.gpu_instance

        share_milli: int | None
        share_milli = self.share_milli

        held_since = self.held_since.isoformat()

        released_at: None | str
        if isinstance(self.released_at, datetime.datetime):
            released_at = self.released_at.isoformat()
        else:
            released_at = self.released_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
                "scope": scope,
                "hostname": hostname,
                "gpu_index": gpu_index,
                "uuid": uuid,
                "mig_profile": mig_profile,
                "gpu_instance": gpu_instance,
                "share_milli": share_milli,
                "held_since": held_since,
                "released_at": released_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        key = d.pop("key")

        scope = ScopeEnum(d.pop("scope"))

        hostname = d.pop("hostname")

        gpu_index = d.pop("gpu_index")

        uuid = d.pop("uuid")

        def _parse_mig_profile(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        mig_profile = _parse_mig_profile(d.pop("mig_profile"))

        def _parse_gpu_instance(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        gpu_instance = _parse_gpu_instance(d.pop("gpu_instance"))

        def _parse_share_milli(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        share_milli = _parse_share_milli(d.pop("share_milli"))

        held_since = datetime.datetime.fromisoformat(d.pop("held_since"))

        def _parse_released_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                released_at_type_0 = datetime.datetime.fromisoformat(data)

                return released_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        released_at = _parse_released_at(d.pop("released_at"))

        metrics_device = cls(
            key=key,
            scope=scope,
            hostname=hostname,
            gpu_index=gpu_index,
            uuid=uuid,
            mig_profile=mig_profile,
            gpu_instance=gpu_instance,
            share_milli=share_milli,
            held_since=held_since,
            released_at=released_at,
        )

        metrics_device.additional_properties = d
        return metrics_device

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
