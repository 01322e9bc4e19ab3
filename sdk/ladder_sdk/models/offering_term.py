from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="OfferingTerm")


@_attrs_define
class OfferingTerm:
    """
    Attributes:
        days (int): The shortest term at this price.
        discount_pct (int): Percent off the on-demand price of a whole GPU.
        price_per_gpu_hour (str):
    """

    days: int
    discount_pct: int
    price_per_gpu_hour: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        days = self.days

        discount_pct = self.discount_pct

        price_per_gpu_hour = self.price_per_gpu_hour

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "days": days,
                "discount_pct": discount_pct,
                "price_per_gpu_hour": price_per_gpu_hour,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        days = d.pop("days")

        discount_pct = d.pop("discount_pct")

        price_per_gpu_hour = d.pop("price_per_gpu_hour")

        offering_term = cls(
            days=days,
            discount_pct=discount_pct,
            price_per_gpu_hour=price_per_gpu_hour,
        )

        offering_term.additional_properties = d
        return offering_term

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
