from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.cold_start import ColdStart
    from ..models.cold_start_phases import ColdStartPhases
    from ..models.percentiles import Percentiles


T = TypeVar("T", bound="ColdStarts")


@_attrs_define
class ColdStarts:
    """
    Attributes:
        allocation (int):
        count (int): Wakes from zero replicas so far.
        total (Percentiles):
        phases (ColdStartPhases):
        queue_delay (Percentiles):
        execution (Percentiles):
        requests_window (str): What the request figures cover: the simulated fleet's last requests, or on Kubernetes the
            last 24 hours of the gateway's request histograms in Prometheus.
        requests_unavailable (None | str): Why the request figures count nothing now (Prometheus did not answer), or
            null.
        recent (list[ColdStart]): The last 10 wakes, newest first.
    """

    allocation: int
    count: int
    total: Percentiles
    phases: ColdStartPhases
    queue_delay: Percentiles
    execution: Percentiles
    requests_window: str
    requests_unavailable: None | str
    recent: list[ColdStart]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocation = self.allocation

        count = self.count

        total = self.total.to_dict()

        phases = self.phases.to_dict()

        queue_delay = self.queue_delay.to_dict()

        execution = self.execution.to_dict()

        requests_window = self.requests_window

        requests_unavailable: None | str
        requests_unavailable = self.requests_unavailable

        recent = []
        for recent_item_data in self.recent:
            recent_item = recent_item_data.to_dict()
            recent.append(recent_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocation": allocation,
                "count": count,
                "total": total,
                "phases": phases,
                "queue_delay": queue_delay,
                "execution": execution,
                "requests_window": requests_window,
                "requests_unavailable": requests_unavailable,
                "recent": recent,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.cold_start import ColdStart
        from ..models.cold_start_phases import ColdStartPhases
        from ..models.percentiles import Percentiles

        d = dict(src_dict)
        allocation = d.pop("allocation")

        count = d.pop("count")

        total = Percentiles.from_dict(d.pop("total"))

        phases = ColdStartPhases.from_dict(d.pop("phases"))

        queue_delay = Percentiles.from_dict(d.pop("queue_delay"))

        execution = Percentiles.from_dict(d.pop("execution"))

        requests_window = d.pop("requests_window")

        def _parse_requests_unavailable(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        requests_unavailable = _parse_requests_unavailable(d.pop("requests_unavailable"))

        recent = []
        _recent = d.pop("recent")
        for recent_item_data in _recent:
            recent_item = ColdStart.from_dict(recent_item_data)

            recent.append(recent_item)

        cold_starts = cls(
            allocation=allocation,
            count=count,
            total=total,
            phases=phases,
            queue_delay=queue_delay,
            execution=execution,
            requests_window=requests_window,
            requests_unavailable=requests_unavailable,
            recent=recent,
        )

        cold_starts.additional_properties = d
        return cold_starts

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
