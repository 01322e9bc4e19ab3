from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.capacity_class_enum import CapacityClassEnum
from ..models.gpu_model_enum import GpuModelEnum
from ..models.on_preemption_enum import OnPreemptionEnum
from ..models.rung_enum import RungEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.gang_request import GangRequest
    from ..models.share_request import ShareRequest
    from ..models.workload_request import WorkloadRequest


T = TypeVar("T", bound="AllocationRequestRequest")


@_attrs_define
class AllocationRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str):
            rung (RungEnum): * `bare_metal` - bare_metal
                * `vm` - vm
                * `confidential_vm` - confidential_vm
                * `container` - container
                * `job` - job
                * `serverless` - serverless
            gpu_model (GpuModelEnum | Unset): * `A100-40GB` - A100-40GB
                * `A100-80GB` - A100-80GB
                * `B200` - B200
                * `GB200` - GB200
                * `H100-NVL-94GB` - H100-NVL-94GB
                * `H100-SXM-80GB` - H100-SXM-80GB
                * `H200-141GB` - H200-141GB
            gpu_models (list[GpuModelEnum] | Unset): Acceptable models, most preferred first (instead of gpu_model).
            gpus (int | Unset): Whole GPUs on one node.
            mig_profile (str | Unset): e.g. 3g.40gb
            share (ShareRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does not
                declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            nodes (int | Unset): Bare-metal nodes.
            regions (list[str] | Unset):
            gang (GangRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does not declare
                as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            workload (WorkloadRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does not
                declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            capacity_class (CapacityClassEnum | Unset): * `on_demand` - on_demand
                * `spot` - spot
                * `reserved` - reserved Default: CapacityClassEnum.ON_DEMAND.
            reservation (int | Unset): Reserved: the id of the reservation it draws on.
            on_preemption (OnPreemptionEnum | Unset): * `stop` - stop
                * `requeue` - requeue Default: OnPreemptionEnum.STOP.
            cpu (int | Unset): vCPUs per member (default: the rung's bundle, 8 per GPU). Up to 4 times the bundle; those
                beyond it are billed per vCPU-hour.
            memory_gib (int | Unset): Memory per member in GiB (default: the rung's bundle). Up to 4 times the bundle; GiB
                beyond it are billed per GiB-hour.
    """

    name: str
    rung: RungEnum
    gpu_model: GpuModelEnum | Unset = UNSET
    gpu_models: list[GpuModelEnum] | Unset = UNSET
    gpus: int | Unset = UNSET
    mig_profile: str | Unset = UNSET
    share: ShareRequest | Unset = UNSET
    nodes: int | Unset = UNSET
    regions: list[str] | Unset = UNSET
    gang: GangRequest | Unset = UNSET
    workload: WorkloadRequest | Unset = UNSET
    capacity_class: CapacityClassEnum | Unset = CapacityClassEnum.ON_DEMAND
    reservation: int | Unset = UNSET
    on_preemption: OnPreemptionEnum | Unset = OnPreemptionEnum.STOP
    cpu: int | Unset = UNSET
    memory_gib: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        rung = self.rung.value

        gpu_model: str | Unset = UNSET
        if not isinstance(self.gpu_model, Unset):
            gpu_model = self.gpu_model.value

        gpu_models: list[str] | Unset = UNSET
        if not isinstance(self.gpu_models, Unset):
            gpu_models = []
            for gpu_models_item_data in self.gpu_models:
                gpu_models_item = gpu_models_item_data.value
                gpu_models.append(gpu_models_item)

        gpus = self.gpus

        mig_profile = self.mig_profile

        share: dict[str, Any] | Unset = UNSET
        if not isinstance(self.share, Unset):
            share = self.share.to_dict()

        nodes = self.nodes

        regions: list[str] | Unset = UNSET
        if not isinstance(self.regions, Unset):
            regions = self.regions

        gang: dict[str, Any] | Unset = UNSET
        if not isinstance(self.gang, Unset):
            gang = self.gang.to_dict()

        workload: dict[str, Any] | Unset = UNSET
        if not isinstance(self.workload, Unset):
            workload = self.workload.to_dict()

        capacity_class: str | Unset = UNSET
        if not isinstance(self.capacity_class, Unset):
            capacity_class = self.capacity_class.value

        reservation = self.reservation

        on_preemption: str | Unset = UNSET
        if not isinstance(self.on_preemption, Unset):
            on_preemption = self.on_preemption.value

        cpu = self.cpu

        memory_gib = self.memory_gib

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "rung": rung,
            }
        )
        if gpu_model is not UNSET:
            field_dict["gpu_model"] = gpu_model
        if gpu_models is not UNSET:
            field_dict["gpu_models"] = gpu_models
        if gpus is not UNSET:
            field_dict["gpus"] = gpus
        if mig_profile is not UNSET:
            field_dict["mig_profile"] = mig_profile
        if share is not UNSET:
            field_dict["share"] = share
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if regions is not UNSET:
            field_dict["regions"] = regions
        if gang is not UNSET:
            field_dict["gang"] = gang
        if workload is not UNSET:
            field_dict["workload"] = workload
        if capacity_class is not UNSET:
            field_dict["capacity_class"] = capacity_class
        if reservation is not UNSET:
            field_dict["reservation"] = reservation
        if on_preemption is not UNSET:
            field_dict["on_preemption"] = on_preemption
        if cpu is not UNSET:
            field_dict["cpu"] = cpu
        if memory_gib is not UNSET:
            field_dict["memory_gib"] = memory_gib

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.gang_request import GangRequest
        from ..models.share_request import ShareRequest
        from ..models.workload_request import WorkloadRequest

        d = dict(src_dict)
        name = d.pop("name")

        rung = RungEnum(d.pop("rung"))

        _gpu_model = d.pop("gpu_model", UNSET)
        gpu_model: GpuModelEnum | Unset
        if isinstance(_gpu_model, Unset):
            gpu_model = UNSET
        else:
            gpu_model = GpuModelEnum(_gpu_model)

        _gpu_models = d.pop("gpu_models", UNSET)
        gpu_models: list[GpuModelEnum] | Unset = UNSET
        if _gpu_models is not UNSET:
            gpu_models = []
            for gpu_models_item_data in _gpu_models:
                gpu_models_item = GpuModelEnum(gpu_models_item_data)

                gpu_models.append(gpu_models_item)

        gpus = d.pop("gpus", UNSET)

        mig_profile = d.pop("mig_profile", UNSET)

        _share = d.pop("share", UNSET)
        share: ShareRequest | Unset
        if isinstance(_share, Unset):
            share = UNSET
        else:
            share = ShareRequest.from_dict(_share)

        nodes = d.pop("nodes", UNSET)

        regions = cast(list[str], d.pop("regions", UNSET))

        _gang = d.pop("gang", UNSET)
        gang: GangRequest | Unset
        if isinstance(_gang, Unset):
            gang = UNSET
        else:
            gang = GangRequest.from_dict(_gang)

        _workload = d.pop("workload", UNSET)
        workload: WorkloadRequest | Unset
        if isinstance(_workload, Unset):
            workload = UNSET
        else:
            workload = WorkloadRequest.from_dict(_workload)

        _capacity_class = d.pop("capacity_class", UNSET)
        capacity_class: CapacityClassEnum | Unset
        if isinstance(_capacity_class, Unset):
            capacity_class = UNSET
        else:
            capacity_class = CapacityClassEnum(_capacity_class)

        reservation = d.pop("reservation", UNSET)

        _on_preemption = d.pop("on_preemption", UNSET)
        on_preemption: OnPreemptionEnum | Unset
        if isinstance(_on_preemption, Unset):
            on_preemption = UNSET
        else:
            on_preemption = OnPreemptionEnum(_on_preemption)

        cpu = d.pop("cpu", UNSET)

        memory_gib = d.pop("memory_gib", UNSET)

        allocation_request_request = cls(
            name=name,
            rung=rung,
            gpu_model=gpu_model,
            gpu_models=gpu_models,
            gpus=gpus,
            mig_profile=mig_profile,
            share=share,
            nodes=nodes,
            regions=regions,
            gang=gang,
            workload=workload,
            capacity_class=capacity_class,
            reservation=reservation,
            on_preemption=on_preemption,
            cpu=cpu,
            memory_gib=memory_gib,
        )

        allocation_request_request.additional_properties = d
        return allocation_request_request

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
