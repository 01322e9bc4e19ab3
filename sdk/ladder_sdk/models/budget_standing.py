from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="BudgetStanding")


@_attrs_define
class BudgetStanding:
    """
    Attributes:
        tenant (str):
        tenant_name (str):
        currency (str):
        budget (str):
        spend (str):
        used_pct (str):
        over (bool):
        hard_stop (bool):
    """

    tenant: str
    tenant_name: str
    currency: str
    budget: str
    spend: str
    used_pct: str
    over: bool
    hard_stop: bool
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        tenant_name = self.tenant_name

        currency = self.currency

        budget = self.budget

        spend = self.spend

        used_pct = self.used_pct

        over = self.over

        hard_stop = self.hard_stop

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tenant": tenant,
                "tenant_name": tenant_name,
                "currency": currency,
                "budget": budget,
                "spend": spend,
                "used_pct": used_pct,
                "over": over,
                "hard_stop": hard_stop,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        tenant_name = d.pop("tenant_name")

        currency = d.pop("currency")

        budget = d.pop("budget")

        spend = d.pop("spend")

        used_pct = d.pop("used_pct")

        over = d.pop("over")

        hard_stop = d.pop("hard_stop")

        budget_standing = cls(
            tenant=tenant,
            tenant_name=tenant_name,
            currency=currency,
            budget=budget,
            spend=spend,
            used_pct=used_pct,
            over=over,
            hard_stop=hard_stop,
        )

        budget_standing.additional_properties = d
        return budget_standing

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
