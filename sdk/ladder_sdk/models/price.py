from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.price_next_price_type_0 import PriceNextPriceType0


T = TypeVar("T", bound="Price")


@_attrs_define
class Price:
    """
    Attributes:
        sku (str):
        rung (str): Empty for storage and for vCPUs and memory.
        gpu_model (None | str): Null for storage and for vCPUs and memory.
        storage_kind (None | str): filesystem, block or snapshot; null for compute.
        unit (str): gpu, mig, node, gb (storage), or vcpu and memory (per vCPU and GiB beyond the bundle a GPU is sold
            with)
        mig_profile (str):
        region (str):
        currency (str):
        unit_price_per_hour (str): Per unit-hour: per GB-hour for storage.
        unit_price_per_month (None | str): Storage: the price per GB-month (730 hours) as quoted; null for compute.
        effective_from (datetime.datetime):
        next_price (None | PriceNextPriceType0): The next scheduled change, if any.
    """

    sku: str
    rung: str
    gpu_model: None | str
    storage_kind: None | str
    unit: str
    mig_profile: str
    region: str
    currency: str
    unit_price_per_hour: str
    unit_price_per_month: None | str
    effective_from: datetime.datetime
    next_price: None | PriceNextPriceType0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.price_next_price_type_0 import PriceNextPriceType0

        sku = self.sku

        rung = self.rung

        gpu_model: None | str
        gpu_model = self.gpu_model

        storage_kind: None | str
        storage_kind = self.storage_kind

        unit = self.unit

        mig_profile = self.mig_profile

        region = self.region

        currency = self.currency

        unit_price_per_hour = self.unit_price_per_hour

        unit_price_per_month: None | str
        unit_price_per_month = self.unit_price_per_month

        effective_from = self.effective_from.isoformat()

        next_price: dict[str, Any] | None
        if isinstance(self.next_price, PriceNextPriceType0):
            next_price = self.next_price.to_dict()
        else:
            next_price = self.next_price

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "sku": sku,
                "rung": rung,
                "gpu_model": gpu_model,
                "storage_kind": storage_kind,
                "unit": unit,
                "mig_profile": mig_profile,
                "region": region,
                "currency": currency,
                "unit_price_per_hour": unit_price_per_hour,
                "unit_price_per_month": unit_price_per_month,
                "effective_from": effective_from,
                "next_price": next_price,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.price_next_price_type_0 import PriceNextPriceType0

        d = dict(src_dict)
        sku = d.pop("sku")

        rung = d.pop("rung")

        def _parse_gpu_model(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        gpu_model = _parse_gpu_model(d.pop("gpu_model"))

        def _parse_storage_kind(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        storage_kind = _parse_storage_kind(d.pop("storage_kind"))

        unit = d.pop("unit")

        mig_profile = d.pop("mig_profile")

        region = d.pop("region")

        currency = d.pop("currency")

        unit_price_per_hour = d.pop("unit_price_per_hour")

        def _parse_unit_price_per_month(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        unit_price_per_month = _parse_unit_price_per_month(d.pop("unit_price_per_month"))

        effective_from = datetime.datetime.fromisoformat(d.pop("effective_from"))

        def _parse_next_price(data: object) -> None | PriceNextPriceType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                next_price_type_0 = PriceNextPriceType0.from_dict(data)

                return next_price_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PriceNextPriceType0, data)

        next_price = _parse_next_price(d.pop("next_price"))

        price = cls(
            sku=sku,
            rung=rung,
            gpu_model=gpu_model,
            storage_kind=storage_kind,
            unit=unit,
            mig_profile=mig_profile,
            region=region,
            currency=currency,
            unit_price_per_hour=unit_price_per_hour,
            unit_price_per_month=unit_price_per_month,
            effective_from=effective_from,
            next_price=next_price,
        )

        price.additional_properties = d
        return price

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
