from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.invoice_ledger_preview_stripe_preview_type_0 import InvoiceLedgerPreviewStripePreviewType0
    from ..models.invoice_line import InvoiceLine


T = TypeVar("T", bound="InvoiceLedgerPreview")


@_attrs_define
class InvoiceLedgerPreview:
    """A month's local preview as the invoice list shows it in ledger-only mode.

    Attributes:
        mode (str): `stripe` when invoices come from Stripe, `ledger_only` when they are local previews (no Stripe key).
        period_start (datetime.datetime):
        period_end (datetime.datetime):
        currency (str):
        lines (list[InvoiceLine]):
        total (str):
        status (str): `preview`: priced from the price book, not an invoice of Stripe's.
        stripe_preview (InvoiceLedgerPreviewStripePreviewType0 | None | Unset): Stripe's own preview (minor units), when
            Stripe is configured.
    """

    mode: str
    period_start: datetime.datetime
    period_end: datetime.datetime
    currency: str
    lines: list[InvoiceLine]
    total: str
    status: str
    stripe_preview: InvoiceLedgerPreviewStripePreviewType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.invoice_ledger_preview_stripe_preview_type_0 import InvoiceLedgerPreviewStripePreviewType0

        mode = self.mode

        period_start = self.period_start.isoformat()

        period_end = self.period_end.isoformat()

        currency = self.currency

        lines = []
        for lines_item_data in self.lines:
            lines_item = lines_item_data.to_dict()
            lines.append(lines_item)

        total = self.total

        status = self.status

        stripe_preview: dict[str, Any] | None | Unset
        if isinstance(self.stripe_preview, Unset):
            stripe_preview = UNSET
        elif isinstance(self.stripe_preview, InvoiceLedgerPreviewStripePreviewType0):
            stripe_preview = self.stripe_preview.to_dict()
        else:
            stripe_preview = self.stripe_preview

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mode": mode,
                "period_start": period_start,
                "period_end": period_end,
                "currency": currency,
                "lines": lines,
                "total": total,
                "status": status,
            }
        )
        if stripe_preview is not UNSET:
            field_dict["stripe_preview"] = stripe_preview

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.invoice_ledger_preview_stripe_preview_type_0 import InvoiceLedgerPreviewStripePreviewType0
        from ..models.invoice_line import InvoiceLine

        d = dict(src_dict)
        mode = d.pop("mode")

        period_start = datetime.datetime.fromisoformat(d.pop("period_start"))

        period_end = datetime.datetime.fromisoformat(d.pop("period_end"))

        currency = d.pop("currency")

        lines = []
        _lines = d.pop("lines")
        for lines_item_data in _lines:
            lines_item = InvoiceLine.from_dict(lines_item_data)

            lines.append(lines_item)

        total = d.pop("total")

        status = d.pop("status")

        def _parse_stripe_preview(data: object) -> InvoiceLedgerPreviewStripePreviewType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stripe_preview_type_0 = InvoiceLedgerPreviewStripePreviewType0.from_dict(data)

                return stripe_preview_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(InvoiceLedgerPreviewStripePreviewType0 | None | Unset, data)

        stripe_preview = _parse_stripe_preview(d.pop("stripe_preview", UNSET))

        invoice_ledger_preview = cls(
            mode=mode,
            period_start=period_start,
            period_end=period_end,
            currency=currency,
            lines=lines,
            total=total,
            status=status,
            stripe_preview=stripe_preview,
        )

        invoice_ledger_preview.additional_properties = d
        return invoice_ledger_preview

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
