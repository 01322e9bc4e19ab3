from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.category_figure import CategoryFigure


T = TypeVar("T", bound="PreservationByCategory")


@_attrs_define
class PreservationByCategory:
    """Per category, those covered."""

    additional_properties: dict[str, CategoryFigure] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.category_figure import CategoryFigure

        d = dict(src_dict)
        preservation_by_category = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = CategoryFigure.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        preservation_by_category.additional_properties = additional_properties
        return preservation_by_category

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> CategoryFigure:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: CategoryFigure) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
