from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Percentiles")


@_attrs_define
class Percentiles:
    """
    Attributes:
        count (int): Samples the percentiles are of.
        p50_ms (int | None): Nearest-rank P50, ms; null: no sample.
        p90_ms (int | None):
        p99_ms (int | None):
    """

    count: int
    p50_ms: int | None
    p90_ms: int | None
    p99_ms: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        count = self.count

        p50_ms: int | None
        p50_ms = self.p50_ms

        p90_ms: int | None
        p90_ms = self.p90_ms

        p99_ms: int | None
        p99_ms = self.p99_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "count": count,
                "p50_ms": p50_ms,
                "p90_ms": p90_ms,
                "p99_ms": p99_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        count = d.pop("count")

        def _parse_p50_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        p50_ms = _parse_p50_ms(d.pop("p50_ms"))

        def _parse_p90_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        p90_ms = _parse_p90_ms(d.pop("p90_ms"))

        def _parse_p99_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        p99_ms = _parse_p99_ms(d.pop("p99_ms"))

        percentiles = cls(
            count=count,
            p50_ms=p50_ms,
            p90_ms=p90_ms,
            p99_ms=p99_ms,
        )

        percentiles.additional_properties = d
        return percentiles

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
