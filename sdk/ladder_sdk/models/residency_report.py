from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.compute_place import ComputePlace
    from ..models.data_place import DataPlace
    from ..models.report_policy import ReportPolicy
    from ..models.volume_place import VolumePlace


T = TypeVar("T", bound="ResidencyReport")


@_attrs_define
class ResidencyReport:
    """
    Attributes:
        tenant (str):
        policy (ReportPolicy):
        compute (list[ComputePlace]): Where the tenant's allocations ran, by hall.
        data (list[DataPlace]): Where the tenant's data lives, by region.
        volumes (list[VolumePlace]): Its volumes not deleted, one by one (each is also counted in `data` by region).
        violations (int): Places the residency now forbids.
    """

    tenant: str
    policy: ReportPolicy
    compute: list[ComputePlace]
    data: list[DataPlace]
    volumes: list[VolumePlace]
    violations: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        policy = self.policy.to_dict()

        compute = []
        for compute_item_data in self.compute:
            compute_item = compute_item_data.to_dict()
            compute.append(compute_item)

        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        volumes = []
        for volumes_item_data in self.volumes:
            volumes_item = volumes_item_data.to_dict()
            volumes.append(volumes_item)

        violations = self.violations

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tenant": tenant,
                "policy": policy,
                "compute": compute,
                "data": data,
                "volumes": volumes,
                "violations": violations,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.compute_place import ComputePlace
        from ..models.data_place import DataPlace
        from ..models.report_policy import ReportPolicy
        from ..models.volume_place import VolumePlace

        d = dict(src_dict)
        tenant = d.pop("tenant")

        policy = ReportPolicy.from_dict(d.pop("policy"))

        compute = []
        _compute = d.pop("compute")
        for compute_item_data in _compute:
            compute_item = ComputePlace.from_dict(compute_item_data)

            compute.append(compute_item)

        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = DataPlace.from_dict(data_item_data)

            data.append(data_item)

        volumes = []
        _volumes = d.pop("volumes")
        for volumes_item_data in _volumes:
            volumes_item = VolumePlace.from_dict(volumes_item_data)

            volumes.append(volumes_item)

        violations = d.pop("violations")

        residency_report = cls(
            tenant=tenant,
            policy=policy,
            compute=compute,
            data=data,
            volumes=volumes,
            violations=violations,
        )

        residency_report.additional_properties = d
        return residency_report

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
