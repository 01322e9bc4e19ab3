from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="CostBasisRequestRequest")


@_attrs_define
class CostBasisRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            gpu_model (str):
            hall (str):
            effective_from (datetime.datetime):
            capex (str):
            power (str):
            space (str):
            network (str):
            currency (str | Unset): ISO code in lower case. Default: 'usd'.
    """

    gpu_model: str
    hall: str
    effective_from: datetime.datetime
    capex: str
    power: str
    space: str
    network: str
    currency: str | Unset = "usd"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpu_model = self.gpu_model

        hall = self.hall

        effective_from = self.effective_from.isoformat()

        capex = self.capex

        power = self.power

        space = self.space

        network = self.network

        currency = self.currency

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpu_model": gpu_model,
                "hall": hall,
                "effective_from": effective_from,
                "capex": capex,
                "power": power,
                "space": space,
                "network": network,
            }
        )
        if currency is not UNSET:
            field_dict["currency"] = currency

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        gpu_model = d.pop("gpu_model")

        hall = d.pop("hall")

        effective_from = datetime.datetime.fromisoformat(d.pop("effective_from"))

        capex = d.pop("capex")

        power = d.pop("power")

        space = d.pop("space")

        network = d.pop("network")

        currency = d.pop("currency", UNSET)

        cost_basis_request_request = cls(
            gpu_model=gpu_model,
            hall=hall,
            effective_from=effective_from,
            capex=capex,
            power=power,
            space=space,
            network=network,
            currency=currency,
        )

        cost_basis_request_request.additional_properties = d
        return cost_basis_request_request

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
