from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.allocation_state_enum import AllocationStateEnum
from ..models.capacity_class_enum import CapacityClassEnum
from ..models.rung_enum import RungEnum

if TYPE_CHECKING:
    from ..models.access import Access
    from ..models.device import Device
    from ..models.fabric import Fabric
    from ..models.fault import Fault
    from ..models.preemption import Preemption


T = TypeVar("T", bound="Allocation")


@_attrs_define
class Allocation:
    """
    Attributes:
        id (int):
        name (str):
        state (AllocationStateEnum): * `requested` - requested
            * `placed` - placed
            * `provisioning` - provisioning
            * `running` - running
            * `restarting` - restarting
            * `idle` - idle
            * `queued` - queued
            * `stopping` - stopping
            * `stopped` - stopped
            * `failed` - failed
        rung (RungEnum): * `bare_metal` - bare_metal
            * `vm` - vm
            * `confidential_vm` - confidential_vm
            * `container` - container
            * `job` - job
            * `serverless` - serverless
        performance_isolation (str):
        security_isolation (str):
        gpu_model (str):
        region (str):
        hall (str):
        devices (list[Device]):
        cpu (None | str): The vCPUs it holds beside its GPUs, all members together, as a decimal string (its rung's
            bundle per GPU); null on bare metal, which holds whole hosts.
        memory_gib (None | str): The memory it holds beside its GPUs in GiB, all members together, as a decimal string;
            null on bare metal.
        cpu_beyond_bundle (None | str): The part of cpu beyond its rung's bundle, billed per vCPU-hour beside the GPUs'
            price ("0": none); null on bare metal.
        memory_gib_beyond_bundle (None | str): The part of memory_gib beyond its rung's bundle, billed per GiB-hour
            ("0": none); null on bare metal.
        created (datetime.datetime):
        state_changed_at (datetime.datetime):
        observed_at (datetime.datetime | None):
        failure_reason (str):
        replicas (int | None): Serverless: ready replicas, what is billed now (0 while idle); null: other rungs.
        cold_start_ms (int | None): Serverless: how long its last wake from zero took until it ran; null: none yet.
        workload (Any): As submitted (secrets by name only), with a serverless endpoint's autoscaling filled in as
            applied; null: none.
        access (Access):
        checkpoint_at (datetime.datetime | None): The last checkpoint the workload reported (a job); a fault bills up to
            it; null: none yet.
        restarts (int):
        goodput_lost_seconds (str): Work lost to provider faults (each fault's time less its checkpoint), not billed;
            decimal string.
        faults (list[Fault]):
        capacity_class (CapacityClassEnum): * `on_demand` - on_demand
            * `spot` - spot
            * `reserved` - reserved
        reservation (int | None):
        on_preemption (str): Spot: stop or requeue when preempted.
        preempted_at (datetime.datetime | None):
        preemptions (list[Preemption]):
        fabric (Fabric | None): A multi-node job's or bare-metal allocation's RDMA fabric: its name, link layer, your
            isolation on it (InfiniBand partition key or RoCE VLAN, yours alone) and the NICs of each node; null: none.
    """

    id: int
    name: str
    state: AllocationStateEnum
    rung: RungEnum
    performance_isolation: str
    security_isolation: str
    gpu_model: str
    region: str
    hall: str
    devices: list[Device]
    cpu: None | str
    memory_gib: None | str
    cpu_beyond_bundle: None | str
    memory_gib_beyond_bundle: None | str
    created: datetime.datetime
    state_changed_at: datetime.datetime
    observed_at: datetime.datetime | None
    failure_reason: str
    replicas: int | None
    cold_start_ms: int | None
    workload: Any
    access: Access
    checkpoint_at: datetime.datetime | None
    restarts: int
    goodput_lost_seconds: str
    faults: list[Fault]
    capacity_class: CapacityClassEnum
    reservation: int | None
    on_preemption: str
    preempted_at: datetime.datetime | None
    preemptions: list[Preemption]
    fabric: Fabric | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.fabric import Fabric

        id = self.id

        name = self.name

        state = self.state.value

        rung = self.rung.value

        performance_isolation = self.performance_isolation

        security_isolation = self.security_isolation

        gpu_model = self.gpu_model

        region = self.region

        hall = self.hall

        devices = []
        for devices_item_data in self.devices:
            devices_item = devices_item_data.to_dict()
            devices.append(devices_item)

        cpu: None | str
        cpu = self.cpu

        memory_gib: None | str
        memory_gib = self.memory_gib

        cpu_beyond_bundle: None | str
        cpu_beyond_bundle = self.cpu_beyond_bundle

        memory_gib_beyond_bundle: None | str
        memory_gib_beyond_bundle = self.memory_gib_beyond_bundle

        created = self.created.isoformat()

        state_changed_at = self.state_changed_at.isoformat()

        observed_at: None | str
        if isinstance(self.observed_at, datetime.datetime):
            observed_at = self.observed_at.isoformat()
        else:
            observed_at = self.observed_at

        failure_reason = self.failure_reason

        replicas: int | None
        replicas = self.replicas

        cold_start_ms: int | None
        cold_start_ms = self.cold_start_ms

        workload = self.workload

        access = self.access.to_dict()

        checkpoint_at: None | str
        if isinstance(self.checkpoint_at, datetime.datetime):
            checkpoint_at = self.checkpoint_at.isoformat()
        else:
            checkpoint_at = self.checkpoint_at

        restarts = self.restarts

        goodput_lost_seconds = self.goodput_lost_seconds

        faults = []
        for faults_item_data in self.faults:
            faults_item = faults_item_data.to_dict()
            faults.append(faults_item)

        capacity_class = self.capacity_class.value

        reservation: int | None
        reservation = self.reservation

        on_preemption = self.on_preemption

        preempted_at: None | str
        if isinstance(self.preempted_at, datetime.datetime):
            preempted_at = self.preempted_at.isoformat()
        else:
            preempted_at = self.preempted_at

        preemptions = []
        for preemptions_item_data in self.preemptions:
            preemptions_item = preemptions_item_data.to_dict()
            preemptions.append(preemptions_item)

        fabric: dict[str, Any] | None
        if isinstance(self.fabric, Fabric):
            fabric = self.fabric.to_dict()
        else:
            fabric = self.fabric

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "state": state,
                "rung": rung,
                "performance_isolation": performance_isolation,
                "security_isolation": security_isolation,
                "gpu_model": gpu_model,
                "region": region,
                "hall": hall,
                "devices": devices,
                "cpu": cpu,
                "memory_gib": memory_gib,
                "cpu_beyond_bundle": cpu_beyond_bundle,
                "memory_gib_beyond_bundle": memory_gib_beyond_bundle,
                "created": created,
                "state_changed_at": state_changed_at,
                "observed_at": observed_at,
                "failure_reason": failure_reason,
                "replicas": replicas,
                "cold_start_ms": cold_start_ms,
                "workload": workload,
                "access": access,
                "checkpoint_at": checkpoint_at,
                "restarts": restarts,
                "goodput_lost_seconds": goodput_lost_seconds,
                "faults": faults,
                "capacity_class": capacity_class,
                "reservation": reservation,
                "on_preemption": on_preemption,
                "preempted_at": preempted_at,
                "preemptions": preemptions,
                "fabric": fabric,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.access import Access
        from ..models.device import Device
        from ..models.fabric import Fabric
        from ..models.fault import Fault
        from ..models.preemption import Preemption

        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        state = AllocationStateEnum(d.pop("state"))

        rung = RungEnum(d.pop("rung"))

        performance_isolation = d.pop("performance_isolation")

        security_isolation = d.pop("security_isolation")

        gpu_model = d.pop("gpu_model")

        region = d.pop("region")

        hall = d.pop("hall")

        devices = []
        _devices = d.pop("devices")
        for devices_item_data in _devices:
            devices_item = Device.from_dict(devices_item_data)

            devices.append(devices_item)

        def _parse_cpu(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        cpu = _parse_cpu(d.pop("cpu"))

        def _parse_memory_gib(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        memory_gib = _parse_memory_gib(d.pop("memory_gib"))

        def _parse_cpu_beyond_bundle(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        cpu_beyond_bundle = _parse_cpu_beyond_bundle(d.pop("cpu_beyond_bundle"))

        def _parse_memory_gib_beyond_bundle(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        memory_gib_beyond_bundle = _parse_memory_gib_beyond_bundle(d.pop("memory_gib_beyond_bundle"))

        created = datetime.datetime.fromisoformat(d.pop("created"))

        state_changed_at = datetime.datetime.fromisoformat(d.pop("state_changed_at"))

        def _parse_observed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                observed_at_type_0 = datetime.datetime.fromisoformat(data)

                return observed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        observed_at = _parse_observed_at(d.pop("observed_at"))

        failure_reason = d.pop("failure_reason")

        def _parse_replicas(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        replicas = _parse_replicas(d.pop("replicas"))

        def _parse_cold_start_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        cold_start_ms = _parse_cold_start_ms(d.pop("cold_start_ms"))

        workload = d.pop("workload")

        access = Access.from_dict(d.pop("access"))

        def _parse_checkpoint_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                checkpoint_at_type_0 = datetime.datetime.fromisoformat(data)

                return checkpoint_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        checkpoint_at = _parse_checkpoint_at(d.pop("checkpoint_at"))

        restarts = d.pop("restarts")

        goodput_lost_seconds = d.pop("goodput_lost_seconds")

        faults = []
        _faults = d.pop("faults")
        for faults_item_data in _faults:
            faults_item = Fault.from_dict(faults_item_data)

            faults.append(faults_item)

        capacity_class = CapacityClassEnum(d.pop("capacity_class"))

        def _parse_reservation(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        reservation = _parse_reservation(d.pop("reservation"))

        on_preemption = d.pop("on_preemption")

        def _parse_preempted_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                preempted_at_type_0 = datetime.datetime.fromisoformat(data)

                return preempted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        preempted_at = _parse_preempted_at(d.pop("preempted_at"))

        preemptions = []
        _preemptions = d.pop("preemptions")
        for preemptions_item_data in _preemptions:
            preemptions_item = Preemption.from_dict(preemptions_item_data)

            preemptions.append(preemptions_item)

        def _parse_fabric(data: object) -> Fabric | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                fabric_type_1 = Fabric.from_dict(data)

                return fabric_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Fabric | None, data)

        fabric = _parse_fabric(d.pop("fabric"))

        allocation = cls(
            id=id,
            name=name,
            state=state,
            rung=rung,
            performance_isolation=performance_isolation,
            security_isolation=security_isolation,
            gpu_model=gpu_model,
            region=region,
            hall=hall,
            devices=devices,
            cpu=cpu,
            memory_gib=memory_gib,
            cpu_beyond_bundle=cpu_beyond_bundle,
            memory_gib_beyond_bundle=memory_gib_beyond_bundle,
            created=created,
            state_changed_at=state_changed_at,
            observed_at=observed_at,
            failure_reason=failure_reason,
            replicas=replicas,
            cold_start_ms=cold_start_ms,
            workload=workload,
            access=access,
            checkpoint_at=checkpoint_at,
            restarts=restarts,
            goodput_lost_seconds=goodput_lost_seconds,
            faults=faults,
            capacity_class=capacity_class,
            reservation=reservation,
            on_preemption=on_preemption,
            preempted_at=preempted_at,
            preemptions=preemptions,
            fabric=fabric,
        )

        allocation.additional_properties = d
        return allocation

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
