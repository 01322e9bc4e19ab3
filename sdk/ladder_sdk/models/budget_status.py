from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="BudgetStatus")


@_attrs_define
class BudgetStatus:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            monthly (None | str): Monthly budget in the account's currency.
            currency (str):
            spend (str): This month so far, open usage too.
            alerts (list[int]): Thresholds (%) crossed this month.
            hard_stop (bool | Unset): At 100%: refuse new allocations, volumes and volume growth, stop running allocations
                (jobs at their next checkpoint); volumes and their data are kept. Default: False.
    """

    monthly: None | str
    currency: str
    spend: str
    alerts: list[int]
    hard_stop: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        monthly: None | str
        monthly = self.monthly

        currency = self.currency

        spend = self.spend

        alerts = self.alerts

        hard_stop = self.hard_stop

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "monthly": monthly,
                "currency": currency,
                "spend": spend,
                "alerts": alerts,
            }
        )
        if hard_stop is not UNSET:
            field_dict["hard_stop"] = hard_stop

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_monthly(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        monthly = _parse_monthly(d.pop("monthly"))

        currency = d.pop("currency")

        spend = d.pop("spend")

        alerts = cast(list[int], d.pop("alerts"))

        hard_stop = d.pop("hard_stop", UNSET)

        budget_status = cls(
            monthly=monthly,
            currency=currency,
            spend=spend,
            alerts=alerts,
            hard_stop=hard_stop,
        )

        budget_status.additional_properties = d
        return budget_status

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
