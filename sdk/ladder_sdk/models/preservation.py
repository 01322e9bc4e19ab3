from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.preservation_by_category import PreservationByCategory


T = TypeVar("T", bound="Preservation")


@_attrs_define
class Preservation:
    """
    Attributes:
        assets (int):
        bytes_ (int):
        by_category (PreservationByCategory): Per category, those covered.
    """

    assets: int
    bytes_: int
    by_category: PreservationByCategory
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assets = self.assets

        bytes_ = self.bytes_

        by_category = self.by_category.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assets": assets,
                "bytes": bytes_,
                "by_category": by_category,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.preservation_by_category import PreservationByCategory

        d = dict(src_dict)
        assets = d.pop("assets")

        bytes_ = d.pop("bytes")

        by_category = PreservationByCategory.from_dict(d.pop("by_category"))

        preservation = cls(
            assets=assets,
            bytes_=bytes_,
            by_category=by_category,
        )

        preservation.additional_properties = d
        return preservation

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
