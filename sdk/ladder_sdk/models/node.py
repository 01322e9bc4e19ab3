from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.blank_enum import BlankEnum
from ..models.node_cpu_tee_enum import NodeCpuTeeEnum
from ..models.node_state_enum import NodeStateEnum

if TYPE_CHECKING:
    from ..models.gpu import Gpu
    from ..models.node_rdma_type_0 import NodeRdmaType0
    from ..models.node_versions import NodeVersions


T = TypeVar("T", bound="Node")


@_attrs_define
class Node:
    """
    Attributes:
        id (int):
        hostname (str):
        region (str):
        hall (str):
        gpu_model (str):
        gpu_count (int):
        nvlink_domain (str):
        cc_capable (bool):
        cc_mode (bool):
        cpu_tee (BlankEnum | NodeCpuTeeEnum):
        attestation_key (str):
        versions (NodeVersions):
        rdma (NodeRdmaType0 | None): The node's RDMA NICs as the fleet document gave them; null without any.
        state (NodeStateEnum): * `registering` - Registering
            * `ready` - Ready
            * `draining` - Draining
            * `quarantined` - Quarantined
            * `sanitizing` - Sanitizing
            * `maintenance` - Maintenance
            * `failed` - Failed
        state_changed_at (datetime.datetime):
        created_at (datetime.datetime):
        gpus (list[Gpu]):
    """

    id: int
    hostname: str
    region: str
    hall: str
    gpu_model: str
    gpu_count: int
    nvlink_domain: str
    cc_capable: bool
    cc_mode: bool
    cpu_tee: BlankEnum | NodeCpuTeeEnum
    attestation_key: str
    versions: NodeVersions
    rdma: NodeRdmaType0 | None
    state: NodeStateEnum
    state_changed_at: datetime.datetime
    created_at: datetime.datetime
    gpus: list[Gpu]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.node_rdma_type_0 import NodeRdmaType0

        id = self.id

        hostname = self.hostname

        region = self.region

        hall = self.hall

        gpu_model = self.gpu_model

        gpu_count = self.gpu_count

        nvlink_domain = self.nvlink_domain

        cc_capable = self.cc_capable

        cc_mode = self.cc_mode

        cpu_tee: str
        if isinstance(self.cpu_tee, NodeCpuTeeEnum):
            cpu_tee = self.cpu_tee.value
        else:
            cpu_tee = self.cpu_tee.value

        attestation_key = self.attestation_key

        versions = self.versions.to_dict()

        rdma: dict[str, Any] | None
        if isinstance(self.rdma, NodeRdmaType0):
            rdma = self.rdma.to_dict()
        else:
            rdma = self.rdma

        state = self.state.value

        state_changed_at = self.state_changed_at.isoformat()

        created_at = self.created_at.isoformat()

        gpus = []
        for gpus_item_data in self.gpus:
            gpus_item = gpus_item_data.to_dict()
            gpus.append(gpus_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "hostname": hostname,
                "region": region,
                "hall": hall,
                "gpu_model": gpu_model,
                "gpu_count": gpu_count,
                "nvlink_domain": nvlink_domain,
                "cc_capable": cc_capable,
                "cc_mode": cc_mode,
                "cpu_tee": cpu_tee,
                "attestation_key": attestation_key,
                "versions": versions,
                "rdma": rdma,
                "state": state,
                "state_changed_at": state_changed_at,
                "created_at": created_at,
                "gpus": gpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.gpu import Gpu
        from ..models.node_rdma_type_0 import NodeRdmaType0
        from ..models.node_versions import NodeVersions

        d = dict(src_dict)
        id = d.pop("id")

        hostname = d.pop("hostname")

        region = d.pop("region")

        hall = d.pop("hall")

        gpu_model = d.pop("gpu_model")

        gpu_count = d.pop("gpu_count")

        nvlink_domain = d.pop("nvlink_domain")

        cc_capable = d.pop("cc_capable")

        cc_mode = d.pop("cc_mode")

        def _parse_cpu_tee(data: object) -> BlankEnum | NodeCpuTeeEnum:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                cpu_tee_type_0 = NodeCpuTeeEnum(data)

                return cpu_tee_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, str):
                raise TypeError()
            cpu_tee_type_1 = BlankEnum(data)

            return cpu_tee_type_1

        cpu_tee = _parse_cpu_tee(d.pop("cpu_tee"))

        attestation_key = d.pop("attestation_key")

        versions = NodeVersions.from_dict(d.pop("versions"))

        def _parse_rdma(data: object) -> NodeRdmaType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rdma_type_0 = NodeRdmaType0.from_dict(data)

                return rdma_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NodeRdmaType0 | None, data)

        rdma = _parse_rdma(d.pop("rdma"))

        state = NodeStateEnum(d.pop("state"))

        state_changed_at = datetime.datetime.fromisoformat(d.pop("state_changed_at"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        gpus = []
        _gpus = d.pop("gpus")
        for gpus_item_data in _gpus:
            gpus_item = Gpu.from_dict(gpus_item_data)

            gpus.append(gpus_item)

        node = cls(
            id=id,
            hostname=hostname,
            region=region,
            hall=hall,
            gpu_model=gpu_model,
            gpu_count=gpu_count,
            nvlink_domain=nvlink_domain,
            cc_capable=cc_capable,
            cc_mode=cc_mode,
            cpu_tee=cpu_tee,
            attestation_key=attestation_key,
            versions=versions,
            rdma=rdma,
            state=state,
            state_changed_at=state_changed_at,
            created_at=created_at,
            gpus=gpus,
        )

        node.additional_properties = d
        return node

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
