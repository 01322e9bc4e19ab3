from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.counts import Counts
    from ..models.gpu_counts import GpuCounts


T = TypeVar("T", bound="FleetLoadResult")


@_attrs_define
class FleetLoadResult:
    """
    Attributes:
        gpu_models (Counts):
        regions (Counts):
        halls (Counts):
        nodes (Counts):
        gpus (GpuCounts):
    """

    gpu_models: Counts
    regions: Counts
    halls: Counts
    nodes: Counts
    gpus: GpuCounts
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpu_models = self.gpu_models.to_dict()

        regions = self.regions.to_dict()

        halls = self.halls.to_dict()

        nodes = self.nodes.to_dict()

        gpus = self.gpus.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpu_models": gpu_models,
                "regions": regions,
                "halls": halls,
                "nodes": nodes,
                "gpus": gpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.counts import Counts
        from ..models.gpu_counts import GpuCounts

        d = dict(src_dict)
        gpu_models = Counts.from_dict(d.pop("gpu_models"))

        regions = Counts.from_dict(d.pop("regions"))

        halls = Counts.from_dict(d.pop("halls"))

        nodes = Counts.from_dict(d.pop("nodes"))

        gpus = GpuCounts.from_dict(d.pop("gpus"))

        fleet_load_result = cls(
            gpu_models=gpu_models,
            regions=regions,
            halls=halls,
            nodes=nodes,
            gpus=gpus,
        )

        fleet_load_result.additional_properties = d
        return fleet_load_result

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
