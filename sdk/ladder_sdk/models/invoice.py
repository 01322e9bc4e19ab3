from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Invoice")


@_attrs_define
class Invoice:
    """
    Attributes:
        id (int):
        stripe_id (str):
        status (str):
        currency (str):
        period_start (datetime.datetime | None):
        period_end (datetime.datetime | None):
        subtotal (int): Minor units.
        total (int): Minor units.
        amount_due (int):
        amount_paid (int):
        lines (Any):
        hosted_invoice_url (str):
    """

    id: int
    stripe_id: str
    status: str
    currency: str
    period_start: datetime.datetime | None
    period_end: datetime.datetime | None
    subtotal: int
    total: int
    amount_due: int
    amount_paid: int
    lines: Any
    hosted_invoice_url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        stripe_id = self.stripe_id

        status = self.status

        currency = self.currency

        period_start: None | str
        if isinstance(self.period_start, datetime.datetime):
            period_start = self.period_start.isoformat()
        else:
            period_start = self.period_start

        period_end: None | str
        if isinstance(self.period_end, datetime.datetime):
            period_end = self.period_end.isoformat()
        else:
            period_end = self.period_end

        subtotal = self.subtotal

        total = self.total

        amount_due = self.amount_due

        amount_paid = self.amount_paid

        lines = self.lines

        hosted_invoice_url = self.hosted_invoice_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "stripe_id": stripe_id,
                "status": status,
                "currency": currency,
                "period_start": period_start,
                "period_end": period_end,
                "subtotal": subtotal,
                "total": total,
                "amount_due": amount_due,
                "amount_paid": amount_paid,
                "lines": lines,
                "hosted_invoice_url": hosted_invoice_url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        stripe_id = d.pop("stripe_id")

        status = d.pop("status")

        currency = d.pop("currency")

        def _parse_period_start(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                period_start_type_0 = datetime.datetime.fromisoformat(data)

                return period_start_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        period_start = _parse_period_start(d.pop("period_start"))

        def _parse_period_end(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                period_end_type_0 = datetime.datetime.fromisoformat(data)

                return period_end_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        period_end = _parse_period_end(d.pop("period_end"))

        subtotal = d.pop("subtotal")

        total = d.pop("total")

        amount_due = d.pop("amount_due")

        amount_paid = d.pop("amount_paid")

        lines = d.pop("lines")

        hosted_invoice_url = d.pop("hosted_invoice_url")

        invoice = cls(
            id=id,
            stripe_id=stripe_id,
            status=status,
            currency=currency,
            period_start=period_start,
            period_end=period_end,
            subtotal=subtotal,
            total=total,
            amount_due=amount_due,
            amount_paid=amount_paid,
            lines=lines,
            hosted_invoice_url=hosted_invoice_url,
        )

        invoice.additional_properties = d
        return invoice

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
