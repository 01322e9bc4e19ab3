from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.category_enum import CategoryEnum

T = TypeVar("T", bound="Affected")


@_attrs_define
class Affected:
    """
    Attributes:
        asset (int):
        name (str):
        category (CategoryEnum): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        note (str):
    """

    asset: int
    name: str
    category: CategoryEnum
    note: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        asset = self.asset

        name = self.name

        category = self.category.value

        note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "asset": asset,
                "name": name,
                "category": category,
                "note": note,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        asset = d.pop("asset")

        name = d.pop("name")

        category = CategoryEnum(d.pop("category"))

        note = d.pop("note")

        affected = cls(
            asset=asset,
            name=name,
            category=category,
            note=note,
        )

        affected.additional_properties = d
        return affected

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
