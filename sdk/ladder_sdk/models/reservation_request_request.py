from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReservationRequestRequest")


@_attrs_define
class ReservationRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            gpu_model (str):
            hall (str):
            gpus (int): Whole nodes' worth of GPUs.
            ends_at (datetime.datetime):
            tenant (str | Unset): Operators: the tenant it is for. A tenant's own order leaves it out (or names itself).
            starts_at (datetime.datetime | Unset): Default: now.
            price_per_gpu_hour (str | Unset): Operators: what the tenant pays per GPU-hour of the term, used or not. A
                tenant's own order is priced by the book: on demand less its term's discount.
    """

    gpu_model: str
    hall: str
    gpus: int
    ends_at: datetime.datetime
    tenant: str | Unset = UNSET
    starts_at: datetime.datetime | Unset = UNSET
    price_per_gpu_hour: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpu_model = self.gpu_model

        hall = self.hall

        gpus = self.gpus

        ends_at = self.ends_at.isoformat()

        tenant = self.tenant

        starts_at: str | Unset = UNSET
        if not isinstance(self.starts_at, Unset):
            starts_at = self.starts_at.isoformat()

        price_per_gpu_hour = self.price_per_gpu_hour

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpu_model": gpu_model,
                "hall": hall,
                "gpus": gpus,
                "ends_at": ends_at,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if starts_at is not UNSET:
            field_dict["starts_at"] = starts_at
        if price_per_gpu_hour is not UNSET:
            field_dict["price_per_gpu_hour"] = price_per_gpu_hour

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        gpu_model = d.pop("gpu_model")

        hall = d.pop("hall")

        gpus = d.pop("gpus")

        ends_at = datetime.datetime.fromisoformat(d.pop("ends_at"))

        tenant = d.pop("tenant", UNSET)

        _starts_at = d.pop("starts_at", UNSET)
        starts_at: datetime.datetime | Unset
        if isinstance(_starts_at, Unset):
            starts_at = UNSET
        else:
            starts_at = datetime.datetime.fromisoformat(_starts_at)

        price_per_gpu_hour = d.pop("price_per_gpu_hour", UNSET)

        reservation_request_request = cls(
            gpu_model=gpu_model,
            hall=hall,
            gpus=gpus,
            ends_at=ends_at,
            tenant=tenant,
            starts_at=starts_at,
            price_per_gpu_hour=price_per_gpu_hour,
        )

        reservation_request_request.additional_properties = d
        return reservation_request_request

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
