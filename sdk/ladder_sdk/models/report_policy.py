from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReportPolicy")


@_attrs_define
class ReportPolicy:
    """
    Attributes:
        regions (list[str] | None):
        jurisdictions (list[str] | None):
        sovereign (bool):
    """

    regions: list[str] | None
    jurisdictions: list[str] | None
    sovereign: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        regions: list[str] | None
        if isinstance(self.regions, list):
            regions = self.regions

        else:
            regions = self.regions

        jurisdictions: list[str] | None
        if isinstance(self.jurisdictions, list):
            jurisdictions = self.jurisdictions

        else:
            jurisdictions = self.jurisdictions

        sovereign = self.sovereign

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "regions": regions,
                "jurisdictions": jurisdictions,
                "sovereign": sovereign,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_regions(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                regions_type_0 = cast(list[str], data)

                return regions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        regions = _parse_regions(d.pop("regions"))

        def _parse_jurisdictions(data: object) -> list[str] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                jurisdictions_type_0 = cast(list[str], data)

                return jurisdictions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None, data)

        jurisdictions = _parse_jurisdictions(d.pop("jurisdictions"))

        sovereign = d.pop("sovereign")

        report_policy = cls(
            regions=regions,
            jurisdictions=jurisdictions,
            sovereign=sovereign,
        )

        report_policy.additional_properties = d
        return report_policy

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
