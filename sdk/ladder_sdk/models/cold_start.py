from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.model_source_enum import ModelSourceEnum

T = TypeVar("T", bound="ColdStart")


@_attrs_define
class ColdStart:
    """
    Attributes:
        woke_at (datetime.datetime):
        ready_at (datetime.datetime):
        total_ms (int):
        device_wait_ms (int | None):
        image_pull_ms (int | None):
        model_load_ms (int | None):
        image_cached (bool | None): The image was on the node already.
        model_source (ModelSourceEnum): * `none` - none
            * `hub` - hub
            * `volume` - volume
    """

    woke_at: datetime.datetime
    ready_at: datetime.datetime
    total_ms: int
    device_wait_ms: int | None
    image_pull_ms: int | None
    model_load_ms: int | None
    image_cached: bool | None
    model_source: ModelSourceEnum
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        woke_at = self.woke_at.isoformat()

        ready_at = self.ready_at.isoformat()

        total_ms = self.total_ms

        device_wait_ms: int | None
        device_wait_ms = self.device_wait_ms

        image_pull_ms: int | None
        image_pull_ms = self.image_pull_ms

        model_load_ms: int | None
        model_load_ms = self.model_load_ms

        image_cached: bool | None
        image_cached = self.image_cached

        model_source = self.model_source.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "woke_at": woke_at,
                "ready_at": ready_at,
                "total_ms": total_ms,
                "device_wait_ms": device_wait_ms,
                "image_pull_ms": image_pull_ms,
                "model_load_ms": model_load_ms,
                "image_cached": image_cached,
                "model_source": model_source,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        woke_at = datetime.datetime.fromisoformat(d.pop("woke_at"))

        ready_at = datetime.datetime.fromisoformat(d.pop("ready_at"))

        total_ms = d.pop("total_ms")

        def _parse_device_wait_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        device_wait_ms = _parse_device_wait_ms(d.pop("device_wait_ms"))

        def _parse_image_pull_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        image_pull_ms = _parse_image_pull_ms(d.pop("image_pull_ms"))

        def _parse_model_load_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        model_load_ms = _parse_model_load_ms(d.pop("model_load_ms"))

        def _parse_image_cached(data: object) -> bool | None:
            if data is None:
                return data
            return cast(bool | None, data)

        image_cached = _parse_image_cached(d.pop("image_cached"))

        model_source = ModelSourceEnum(d.pop("model_source"))

        cold_start = cls(
            woke_at=woke_at,
            ready_at=ready_at,
            total_ms=total_ms,
            device_wait_ms=device_wait_ms,
            image_pull_ms=image_pull_ms,
            model_load_ms=model_load_ms,
            image_cached=image_cached,
            model_source=model_source,
        )

        cold_start.additional_properties = d
        return cold_start

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
