from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.metric_devices import MetricDevices


T = TypeVar("T", bound="Metric")


@_attrs_define
class Metric:
    """
    Attributes:
        unit (str): ratio (0..1 of cycles), MiB, W or C.
        combined (str): How the devices' values make `all`: mean, sum or max.
        all_ (list[list[Any]]): [unix seconds, value] pairs.
        devices (MetricDevices): Per device key, [unix seconds, value]; empty when `per_device` is false, and for
            `memory_peak` (per device, it is `memory_used`).
    """

    unit: str
    combined: str
    all_: list[list[Any]]
    devices: MetricDevices
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        unit = self.unit

        combined = self.combined

        all_ = []
        for all_item_data in self.all_:
            all_item = all_item_data

            all_.append(all_item)

        devices = self.devices.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "unit": unit,
                "combined": combined,
                "all": all_,
                "devices": devices,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.metric_devices import MetricDevices

        d = dict(src_dict)
        unit = d.pop("unit")

        combined = d.pop("combined")

        all_ = []
        _all_ = d.pop("all")
        for all_item_data in _all_:
            all_item = cast(list[Any], all_item_data)

            all_.append(all_item)

        devices = MetricDevices.from_dict(d.pop("devices"))

        metric = cls(
            unit=unit,
            combined=combined,
            all_=all_,
            devices=devices,
        )

        metric.additional_properties = d
        return metric

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
