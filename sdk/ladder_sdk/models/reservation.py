from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.reservation_use import ReservationUse


T = TypeVar("T", bound="Reservation")


@_attrs_define
class Reservation:
    """
    Attributes:
        id (int):
        tenant (str):
        gpu_model (str):
        region (str):
        hall (str):
        gpus (int):
        starts_at (datetime.datetime):
        ends_at (datetime.datetime):
        cancelled_at (datetime.datetime | None): Ended early by an operator.
        ended_at (datetime.datetime): When its term ends: its end, or ended early.
        price_per_gpu_hour (str):
        currency (str):
        created_at (datetime.datetime):
        use (ReservationUse):
    """

    id: int
    tenant: str
    gpu_model: str
    region: str
    hall: str
    gpus: int
    starts_at: datetime.datetime
    ends_at: datetime.datetime
    cancelled_at: datetime.datetime | None
    ended_at: datetime.datetime
    price_per_gpu_hour: str
    currency: str
    created_at: datetime.datetime
    use: ReservationUse
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        tenant = self.tenant

        gpu_model = self.gpu_model

        region = self.region

        hall = self.hall

        gpus = self.gpus

        starts_at = self.starts_at.isoformat()

        ends_at = self.ends_at.isoformat()

        cancelled_at: None | str
        if isinstance(self.cancelled_at, datetime.datetime):
            cancelled_at = self.cancelled_at.isoformat()
        else:
            cancelled_at = self.cancelled_at

        ended_at = self.ended_at.isoformat()

        price_per_gpu_hour = self.price_per_gpu_hour

        currency = self.currency

        created_at = self.created_at.isoformat()

        use = self.use.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "tenant": tenant,
                "gpu_model": gpu_model,
                "region": region,
                "hall": hall,
                "gpus": gpus,
                "starts_at": starts_at,
                "ends_at": ends_at,
                "cancelled_at": cancelled_at,
                "ended_at": ended_at,
                "price_per_gpu_hour": price_per_gpu_hour,
                "currency": currency,
                "created_at": created_at,
                "use": use,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.reservation_use import ReservationUse

        d = dict(src_dict)
        id = d.pop("id")

        tenant = d.pop("tenant")

        gpu_model = d.pop("gpu_model")

        region = d.pop("region")

        hall = d.pop("hall")

        gpus = d.pop("gpus")

        starts_at = datetime.datetime.fromisoformat(d.pop("starts_at"))

        ends_at = datetime.datetime.fromisoformat(d.pop("ends_at"))

        def _parse_cancelled_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                cancelled_at_type_0 = datetime.datetime.fromisoformat(data)

                return cancelled_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        cancelled_at = _parse_cancelled_at(d.pop("cancelled_at"))

        ended_at = datetime.datetime.fromisoformat(d.pop("ended_at"))

        price_per_gpu_hour = d.pop("price_per_gpu_hour")

        currency = d.pop("currency")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        use = ReservationUse.from_dict(d.pop("use"))

        reservation = cls(
            id=id,
            tenant=tenant,
            gpu_model=gpu_model,
            region=region,
            hall=hall,
            gpus=gpus,
            starts_at=starts_at,
            ends_at=ends_at,
            cancelled_at=cancelled_at,
            ended_at=ended_at,
            price_per_gpu_hour=price_per_gpu_hour,
            currency=currency,
            created_at=created_at,
            use=use,
        )

        reservation.additional_properties = d
        return reservation

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
