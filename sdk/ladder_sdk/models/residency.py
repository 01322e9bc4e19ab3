from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Residency")


@_attrs_define
class Residency:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            regions (list[str] | None | Unset): Region codes the tenant's compute and data may use; null: any.
            jurisdictions (list[str] | None | Unset): Jurisdictions (e.g. EU, US) allowed; null: any. A sovereign tenant
                names exactly one.
            sovereign (bool | Unset): Use only halls fenced for the jurisdiction. Default: False.
    """

    regions: list[str] | None | Unset = UNSET
    jurisdictions: list[str] | None | Unset = UNSET
    sovereign: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        regions: list[str] | None | Unset
        if isinstance(self.regions, Unset):
            regions = UNSET
        elif isinstance(self.regions, list):
            regions = self.regions

        else:
            regions = self.regions

        jurisdictions: list[str] | None | Unset
        if isinstance(self.jurisdictions, Unset):
            jurisdictions = UNSET
        elif isinstance(self.jurisdictions, list):
            jurisdictions = self.jurisdictions

        else:
            jurisdictions = self.jurisdictions

        sovereign = self.sovereign

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if regions is not UNSET:
            field_dict["regions"] = regions
        if jurisdictions is not UNSET:
            field_dict["jurisdictions"] = jurisdictions
        if sovereign is not UNSET:
            field_dict["sovereign"] = sovereign

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_regions(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                regions_type_0 = cast(list[str], data)

                return regions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        regions = _parse_regions(d.pop("regions", UNSET))

        def _parse_jurisdictions(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                jurisdictions_type_0 = cast(list[str], data)

                return jurisdictions_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        jurisdictions = _parse_jurisdictions(d.pop("jurisdictions", UNSET))

        sovereign = d.pop("sovereign", UNSET)

        residency = cls(
            regions=regions,
            jurisdictions=jurisdictions,
            sovereign=sovereign,
        )

        residency.additional_properties = d
        return residency

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
