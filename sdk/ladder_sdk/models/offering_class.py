from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.capacity_class_enum import CapacityClassEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.offering_class_prices import OfferingClassPrices
    from ..models.offering_term import OfferingTerm


T = TypeVar("T", bound="OfferingClass")


@_attrs_define
class OfferingClass:
    """One way the offering is sold (docs/capacity.md).

    Attributes:
        capacity_class (CapacityClassEnum): * `on_demand` - on_demand
            * `spot` - spot
            * `reserved` - reserved
        title (str): As the portal names it.
        promise (str): What it promises, in words.
        preemptible (bool): It may be preempted, with notice, for on-demand or reserved work
        prices (OfferingClassPrices): Price per unit-hour now, by unit.
        discount_pct (None | str): Spot: percent off the on-demand price.
        terms (list[OfferingTerm] | Unset): Reserved: a reservation's price per GPU-hour for each term a tenant orders
            (its work: nothing).
    """

    capacity_class: CapacityClassEnum
    title: str
    promise: str
    preemptible: bool
    prices: OfferingClassPrices
    discount_pct: None | str
    terms: list[OfferingTerm] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        capacity_class = self.capacity_class.value

        title = self.title

        promise = self.promise

        preemptible = self.preemptible

        prices = self.prices.to_dict()

        discount_pct: None | str
        discount_pct = self.discount_pct

        terms: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.terms, Unset):
            terms = []
            for terms_item_data in self.terms:
                terms_item = terms_item_data.to_dict()
                terms.append(terms_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "capacity_class": capacity_class,
                "title": title,
                "promise": promise,
                "preemptible": preemptible,
                "prices": prices,
                "discount_pct": discount_pct,
            }
        )
        if terms is not UNSET:
            field_dict["terms"] = terms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.offering_class_prices import OfferingClassPrices
        from ..models.offering_term import OfferingTerm

        d = dict(src_dict)
        capacity_class = CapacityClassEnum(d.pop("capacity_class"))

        title = d.pop("title")

        promise = d.pop("promise")

        preemptible = d.pop("preemptible")

        prices = OfferingClassPrices.from_dict(d.pop("prices"))

        def _parse_discount_pct(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        discount_pct = _parse_discount_pct(d.pop("discount_pct"))

        _terms = d.pop("terms", UNSET)
        terms: list[OfferingTerm] | Unset = UNSET
        if _terms is not UNSET:
            terms = []
            for terms_item_data in _terms:
                terms_item = OfferingTerm.from_dict(terms_item_data)

                terms.append(terms_item)

        offering_class = cls(
            capacity_class=capacity_class,
            title=title,
            promise=promise,
            preemptible=preemptible,
            prices=prices,
            discount_pct=discount_pct,
            terms=terms,
        )

        offering_class.additional_properties = d
        return offering_class

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
