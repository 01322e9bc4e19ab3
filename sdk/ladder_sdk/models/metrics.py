from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.resolution_enum import ResolutionEnum

if TYPE_CHECKING:
    from ..models.metrics_device import MetricsDevice
    from ..models.metrics_metrics import MetricsMetrics


T = TypeVar("T", bound="Metrics")


@_attrs_define
class Metrics:
    """
    Attributes:
        allocation (int):
        step_seconds (int):
        devices (list[MetricsDevice]):
        metrics (MetricsMetrics):
        findings (list[str]): What the series say, in words.
        unavailable (None | str): Why there are no series (Prometheus), or null.
        resolution (ResolutionEnum): * `raw` - raw
            * `5m` - 5m
        per_device (bool): Whether `devices` of each metric holds per-device series: up to 16 devices; above that only
            the combined series are read.
        from_ (datetime.datetime):
        to (datetime.datetime):
    """

    allocation: int
    step_seconds: int
    devices: list[MetricsDevice]
    metrics: MetricsMetrics
    findings: list[str]
    unavailable: None | str
    resolution: ResolutionEnum
    per_device: bool
    from_: datetime.datetime
    to: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocation = self.allocation

        step_seconds = self.step_seconds

        devices = []
        for devices_item_data in self.devices:
            devices_item = devices_item_data.to_dict()
            devices.append(devices_item)

        metrics = self.metrics.to_dict()

        findings = self.findings

        unavailable: None | str
        unavailable = self.unavailable

        resolution = self.resolution.value

        per_device = self.per_device

        from_ = self.from_.isoformat()

        to = self.to.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocation": allocation,
                "step_seconds": step_seconds,
                "devices": devices,
                "metrics": metrics,
                "findings": findings,
                "unavailable": unavailable,
                "resolution": resolution,
                "per_device": per_device,
                "from": from_,
                "to": to,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.metrics_device import MetricsDevice
        from ..models.metrics_metrics import MetricsMetrics

        d = dict(src_dict)
        allocation = d.pop("allocation")

        step_seconds = d.pop("step_seconds")

        devices = []
        _devices = d.pop("devices")
        for devices_item_data in _devices:
            devices_item = MetricsDevice.from_dict(devices_item_data)

            devices.append(devices_item)

        metrics = MetricsMetrics.from_dict(d.pop("metrics"))

        findings = cast(list[str], d.pop("findings"))

        def _parse_unavailable(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        unavailable = _parse_unavailable(d.pop("unavailable"))

        resolution = ResolutionEnum(d.pop("resolution"))

        per_device = d.pop("per_device")

        from_ = datetime.datetime.fromisoformat(d.pop("from"))

        to = datetime.datetime.fromisoformat(d.pop("to"))

        metrics = cls(
            allocation=allocation,
            step_seconds=step_seconds,
            devices=devices,
            metrics=metrics,
            findings=findings,
            unavailable=unavailable,
            resolution=resolution,
            per_device=per_device,
            from_=from_,
            to=to,
        )

        metrics.additional_properties = d
        return metrics

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
