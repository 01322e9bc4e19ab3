from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.storage_price_next_price_type_0 import StoragePriceNextPriceType0


T = TypeVar("T", bound="StoragePrice")


@_attrs_define
class StoragePrice:
    """
    Attributes:
        region (str):
        storage_kind (str): filesystem, block or snapshot
        sku (str):
        currency (None | str):
        per_gb_month (None | str): As quoted; null: not priced (volumes refused).
        unit_price_per_hour (None | str): Per GB-hour, as the price book keeps it.
        effective_from (datetime.datetime | None):
        next_price (None | StoragePriceNextPriceType0): The next scheduled change, if any.
    """

    region: str
    storage_kind: str
    sku: str
    currency: None | str
    per_gb_month: None | str
    unit_price_per_hour: None | str
    effective_from: datetime.datetime | None
    next_price: None | StoragePriceNextPriceType0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.storage_price_next_price_type_0 import StoragePriceNextPriceType0

        region = self.region

        storage_kind = self.storage_kind

        sku = self.sku

        currency: None | str
        currency = self.currency

        per_gb_month: None | str
        per_gb_month = self.per_gb_month

        unit_price_per_hour: None | str
        unit_price_per_hour = self.unit_price_per_hour

        effective_from: None | str
        if isinstance(self.effective_from, datetime.datetime):
            effective_from = self.effective_from.isoformat()
        else:
            effective_from = self.effective_from

        next_price: dict[str, Any] | None
        if isinstance(self.next_price, StoragePriceNextPriceType0):
            next_price = self.next_price.to_dict()
        else:
            next_price = self.next_price

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "region": region,
                "storage_kind": storage_kind,
                "sku": sku,
                "currency": currency,
                "per_gb_month": per_gb_month,
                "unit_price_per_hour": unit_price_per_hour,
                "effective_from": effective_from,
                "next_price": next_price,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.storage_price_next_price_type_0 import StoragePriceNextPriceType0

        d = dict(src_dict)
        region = d.pop("region")

        storage_kind = d.pop("storage_kind")

        sku = d.pop("sku")

        def _parse_currency(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        currency = _parse_currency(d.pop("currency"))

        def _parse_per_gb_month(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        per_gb_month = _parse_per_gb_month(d.pop("per_gb_month"))

        def _parse_unit_price_per_hour(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        unit_price_per_hour = _parse_unit_price_per_hour(d.pop("unit_price_per_hour"))

        def _parse_effective_from(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                effective_from_type_0 = datetime.datetime.fromisoformat(data)

                return effective_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        effective_from = _parse_effective_from(d.pop("effective_from"))

        def _parse_next_price(data: object) -> None | StoragePriceNextPriceType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                next_price_type_0 = StoragePriceNextPriceType0.from_dict(data)

                return next_price_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StoragePriceNextPriceType0, data)

        next_price = _parse_next_price(d.pop("next_price"))

        storage_price = cls(
            region=region,
            storage_kind=storage_kind,
            sku=sku,
            currency=currency,
            per_gb_month=per_gb_month,
            unit_price_per_hour=unit_price_per_hour,
            effective_from=effective_from,
            next_price=next_price,
        )

        storage_price.additional_properties = d
        return storage_price

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
