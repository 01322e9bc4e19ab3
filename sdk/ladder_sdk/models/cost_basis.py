from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CostBasis")


@_attrs_define
class CostBasis:
    """
    Attributes:
        id (int):
        gpu_model (str):
        hall (str):
        effective_from (datetime.datetime):
        capex (str):
        power (str):
        space (str):
        network (str):
        per_gpu_hour (str):
        currency (str | Unset):
        created_at (datetime.datetime | Unset):
    """

    id: int
    gpu_model: str
    hall: str
    effective_from: datetime.datetime
    capex: str
    power: str
    space: str
    network: str
    per_gpu_hour: str
    currency: str | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        gpu_model = self.gpu_model

        hall = self.hall

        effective_from = self.effective_from.isoformat()

        capex = self.capex

        power = self.power

        space = self.space

        network = self.network

        per_gpu_hour = self.per_gpu_hour

        currency = self.currency

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "gpu_model": gpu_model,
                "hall": hall,
                "effective_from": effective_from,
                "capex": capex,
                "power": power,
                "space": space,
                "network": network,
                "per_gpu_hour": per_gpu_hour,
            }
        )
        if currency is not UNSET:
            field_dict["currency"] = currency
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        gpu_model = d.pop("gpu_model")

        hall = d.pop("hall")

        effective_from = datetime.datetime.fromisoformat(d.pop("effective_from"))

        capex = d.pop("capex")

        power = d.pop("power")

        space = d.pop("space")

        network = d.pop("network")

        per_gpu_hour = d.pop("per_gpu_hour")

        currency = d.pop("currency", UNSET)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        cost_basis = cls(
            id=id,
            gpu_model=gpu_model,
            hall=hall,
            effective_from=effective_from,
            capex=capex,
            power=power,
            space=space,
            network=network,
            per_gpu_hour=per_gpu_hour,
            currency=currency,
            created_at=created_at,
        )

        cost_basis.additional_properties = d
        return cost_basis

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
