from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.push_state_enum import PushStateEnum

T = TypeVar("T", bound="Push")


@_attrs_define
class Push:
    """
    Attributes:
        id (int):
        identifier (str): The meter event's identifier at Stripe.
        tenant (str):
        sku (str):
        window_start (str):
        window_end (str):
        seq (int):
        quantity_milli (int):
        meter_value (int): Whole unit-seconds sent to Stripe (remainders carried).
        amount (str): Exact; invoices round per line.
        currency (str):
        push_state (PushStateEnum): * `pending` - Pending
            * `sending` - Sending
            * `sent` - Sent
            * `nothing` - Nothing
            * `failed` - Failed
            * `stale` - Stale
        push_attempts (int):
        stripe_message (str): Why it was not sent.
        retry_refused (None | str): Why it cannot be retried; null when it can.
    """

    id: int
    identifier: str
    tenant: str
    sku: str
    window_start: str
    window_end: str
    seq: int
    quantity_milli: int
    meter_value: int
    amount: str
    currency: str
    push_state: PushStateEnum
    push_attempts: int
    stripe_message: str
    retry_refused: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        identifier = self.identifier

        tenant = self.tenant

        sku = self.sku

        window_start = self.window_start

        window_end = self.window_end

        seq = self.seq

        quantity_milli = self.quantity_milli

        meter_value = self.meter_value

        amount = self.amount

        currency = self.currency

        push_state = self.push_state.value

        push_attempts = self.push_attempts

        stripe_message = self.stripe_message

        retry_refused: None | str
        retry_refused = self.retry_refused

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "identifier": identifier,
                "tenant": tenant,
                "sku": sku,
                "window_start": window_start,
                "window_end": window_end,
                "seq": seq,
                "quantity_milli": quantity_milli,
                "meter_value": meter_value,
                "amount": amount,
                "currency": currency,
                "push_state": push_state,
                "push_attempts": push_attempts,
                "stripe_message": stripe_message,
                "retry_refused": retry_refused,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        identifier = d.pop("identifier")

        tenant = d.pop("tenant")

        sku = d.pop("sku")

        window_start = d.pop("window_start")

        window_end = d.pop("window_end")

        seq = d.pop("seq")

        quantity_milli = d.pop("quantity_milli")

        meter_value = d.pop("meter_value")

        amount = d.pop("amount")

        currency = d.pop("currency")

        push_state = PushStateEnum(d.pop("push_state"))

        push_attempts = d.pop("push_attempts")

        stripe_message = d.pop("stripe_message")

        def _parse_retry_refused(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        retry_refused = _parse_retry_refused(d.pop("retry_refused"))

        push = cls(
            id=id,
            identifier=identifier,
            tenant=tenant,
            sku=sku,
            window_start=window_start,
            window_end=window_end,
            seq=seq,
            quantity_milli=quantity_milli,
            meter_value=meter_value,
            amount=amount,
            currency=currency,
            push_state=push_state,
            push_attempts=push_attempts,
            stripe_message=stripe_message,
            retry_refused=retry_refused,
        )

        push.additional_properties = d
        return push

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
