from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="DataPlace")


@_attrs_define
class DataPlace:
    """
    Attributes:
        region (str):
        jurisdiction (str):
        assets (int): Assets not shredded.
        bytes_ (int):
        violation (None | str): Why the residency now forbids this place.
        asset_ids (list[int] | Unset): With a violation: the first ids.
    """

    region: str
    jurisdiction: str
    assets: int
    bytes_: int
    violation: None | str
    asset_ids: list[int] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        region = self.region

        jurisdiction = self.jurisdiction

        assets = self.assets

        bytes_ = self.bytes_

        violation: None | str
        violation = self.violation

        asset_ids: list[int] | Unset = UNSET
        if not isinstance(self.asset_ids, Unset):
            asset_ids = self.asset_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "region": region,
                "jurisdiction": jurisdiction,
                "assets": assets,
                "bytes": bytes_,
                "violation": violation,
            }
        )
        if asset_ids is not UNSET:
            field_dict["asset_ids"] = asset_ids

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        region = d.pop("region")

        jurisdiction = d.pop("jurisdiction")

        assets = d.pop("assets")

        bytes_ = d.pop("bytes")

        def _parse_violation(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        violation = _parse_violation(d.pop("violation"))

        asset_ids = cast(list[int], d.pop("asset_ids", UNSET))

        data_place = cls(
            region=region,
            jurisdiction=jurisdiction,
            assets=assets,
            bytes_=bytes_,
            violation=violation,
            asset_ids=asset_ids,
        )

        data_place.additional_properties = d
        return data_place

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
