from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="UsageRow")


@_attrs_define
class UsageRow:
    """
    Attributes:
        sku (str):
        window_start (datetime.datetime):
        unit (str): What quantity counts: GPU-hours, MIG slice-hours, node-hours, GB-hours, vCPU-hours or GiB-hours.
        quantity (str): Unit-hours of the SKU.
        gpu_seconds (str): Unit-seconds of the SKU (GB-seconds for storage).
        amount (str):
        currency (str):
    """

    sku: str
    window_start: datetime.datetime
    unit: str
    quantity: str
    gpu_seconds: str
    amount: str
    currency: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        sku = self.sku

        window_start = self.window_start.isoformat()

        unit = self.unit

        quantity = self.quantity

        gpu_seconds = self.gpu_seconds

        amount = self.amount

        currency = self.currency

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sku": sku,
                "window_start": window_start,
                "unit": unit,
                "quantity": quantity,
                "gpu_seconds": gpu_seconds,
                "amount": amount,
                "currency": currency,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        sku = d.pop("sku")

        window_start = datetime.datetime.fromisoformat(d.pop("window_start"))

        unit = d.pop("unit")

        quantity = d.pop("quantity")

        gpu_seconds = d.pop("gpu_seconds")

        amount = d.pop("amount")

        currency = d.pop("currency")

        usage_row = cls(
            sku=sku,
            window_start=window_start,
            unit=unit,
            quantity=quantity,
            gpu_seconds=gpu_seconds,
            amount=amount,
            currency=currency,
        )

        usage_row.additional_properties = d
        return usage_row

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
