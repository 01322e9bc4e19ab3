from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="InvoiceLine")


@_attrs_define
class InvoiceLine:
    """
    Attributes:
        sku (str):
        unit (str): What quantity counts: GPU-hours, MIG slice-hours, node-hours, GB-hours, vCPU-hours or GiB-hours.
        quantity (str): Unit-hours of the SKU.
        unit_price (str): Per unit-hour (per GB-hour for storage).
        unit_price_per_month (None | str): Storage: per GB-month; null for compute.
        amount (str):
    """

    sku: str
    unit: str
    quantity: str
    unit_price: str
    unit_price_per_month: None | str
    amount: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sku = self.sku

        unit = self.unit

        quantity = self.quantity

        unit_price = self.unit_price

        unit_price_per_month: None | str
        unit_price_per_month = self.unit_price_per_month

        amount = self.amount

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sku": sku,
                "unit": unit,
                "quantity": quantity,
                "unit_price": unit_price,
                "unit_price_per_month": unit_price_per_month,
                "amount": amount,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        sku = d.pop("sku")

        unit = d.pop("unit")

        quantity = d.pop("quantity")

        unit_price = d.pop("unit_price")

        def _parse_unit_price_per_month(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        unit_price_per_month = _parse_unit_price_per_month(d.pop("unit_price_per_month"))

        amount = d.pop("amount")

        invoice_line = cls(
            sku=sku,
            unit=unit,
            quantity=quantity,
            unit_price=unit_price,
            unit_price_per_month=unit_price_per_month,
            amount=amount,
        )

        invoice_line.additional_properties = d
        return invoice_line

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
