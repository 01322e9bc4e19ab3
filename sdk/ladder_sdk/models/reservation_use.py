from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReservationUse")


@_attrs_define
class ReservationUse:
    """
    Attributes:
        in_use_gpus (str): GPUs its reserved work holds now.
        used_gpu_hours (str): GPU-hours its reserved work ran inside it so far.
        committed_gpu_hours (str): GPU-hours of its term from its start until now (or its end).
        utilisation (None | str): Used over committed; null before it starts.
    """

    in_use_gpus: str
    used_gpu_hours: str
    committed_gpu_hours: str
    utilisation: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        in_use_gpus = self.in_use_gpus

        used_gpu_hours = self.used_gpu_hours

        committed_gpu_hours = self.committed_gpu_hours

        utilisation: None | str
        utilisation = self.utilisation

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "in_use_gpus": in_use_gpus,
                "used_gpu_hours": used_gpu_hours,
                "committed_gpu_hours": committed_gpu_hours,
                "utilisation": utilisation,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        in_use_gpus = d.pop("in_use_gpus")

        used_gpu_hours = d.pop("used_gpu_hours")

        committed_gpu_hours = d.pop("committed_gpu_hours")

        def _parse_utilisation(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        utilisation = _parse_utilisation(d.pop("utilisation"))

        reservation_use = cls(
            in_use_gpus=in_use_gpus,
            used_gpu_hours=used_gpu_hours,
            committed_gpu_hours=committed_gpu_hours,
            utilisation=utilisation,
        )

        reservation_use.additional_properties = d
        return reservation_use

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
