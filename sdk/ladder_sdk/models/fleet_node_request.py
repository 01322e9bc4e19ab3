from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.gpu_model_enum import GpuModelEnum
from ..models.node_cpu_tee_enum import NodeCpuTeeEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.fleet_versions_request import FleetVersionsRequest


T = TypeVar("T", bound="FleetNodeRequest")


@_attrs_define
class FleetNodeRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            hostname (str): Lower-case DNS name; unique in the fleet.
            gpu_model (GpuModelEnum): * `A100-40GB` - A100-40GB
                * `A100-80GB` - A100-80GB
                * `B200` - B200
                * `GB200` - GB200
                * `H100-NVL-94GB` - H100-NVL-94GB
                * `H100-SXM-80GB` - H100-SXM-80GB
                * `H200-141GB` - H200-141GB
            gpu_count (int):
            nvlink_domain (str): Within one hall, one GPU model.
            cc_capable (bool):
            versions (FleetVersionsRequest): Refuses, with 422 ``validation_error``, every field of the body it does not
                declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            cc_mode (bool | Unset): Needs cc_capable and a GPU model that supports CC. Default: False.
            cpu_tee (NodeCpuTeeEnum | None | Unset): The CPU TEE of a cc_capable host: snp (AMD SEV-SNP) or tdx (Intel TDX).
                Required with cc_mode.

                * `snp` - snp
                * `tdx` - tdx
    """

    hostname: str
    gpu_model: GpuModelEnum
    gpu_count: int
    nvlink_domain: str
    cc_capable: bool
    versions: FleetVersionsRequest
    cc_mode: bool | Unset = False
    cpu_tee: NodeCpuTeeEnum | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hostname = self.hostname

        gpu_model = self.gpu_model.value

        gpu_count = self.gpu_count

        nvlink_domain = self.nvlink_domain

        cc_capable = self.cc_capable

        versions = self.versions.to_dict()

        cc_mode = self.cc_mode

        cpu_tee: None | str | Unset
        if isinstance(self.cpu_tee, Unset):
            cpu_tee = UNSET
        elif isinstance(self.cpu_tee, NodeCpuTeeEnum):
            cpu_tee = self.cpu_tee.value
        else:
            cpu_tee = self.cpu_tee

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hostname": hostname,
                "gpu_model": gpu_model,
                "gpu_count": gpu_count,
                "nvlink_domain": nvlink_domain,
                "cc_capable": cc_capable,
                "versions": versions,
            }
        )
        if cc_mode is not UNSET:
            field_dict["cc_mode"] = cc_mode
        if cpu_tee is not UNSET:
            field_dict["cpu_tee"] = cpu_tee

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fleet_versions_request import FleetVersionsRequest

        d = dict(src_dict)
        hostname = d.pop("hostname")

        gpu_model = GpuModelEnum(d.pop("gpu_model"))

        gpu_count = d.pop("gpu_count")

        nvlink_domain = d.pop("nvlink_domain")

        cc_capable = d.pop("cc_capable")

        versions = FleetVersionsRequest.from_dict(d.pop("versions"))

        cc_mode = d.pop("cc_mode", UNSET)

        def _parse_cpu_tee(data: object) -> NodeCpuTeeEnum | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                cpu_tee_type_0 = NodeCpuTeeEnum(data)

                return cpu_tee_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NodeCpuTeeEnum | None | Unset, data)

        cpu_tee = _parse_cpu_tee(d.pop("cpu_tee", UNSET))

        fleet_node_request = cls(
            hostname=hostname,
            gpu_model=gpu_model,
            gpu_count=gpu_count,
            nvlink_domain=nvlink_domain,
            cc_capable=cc_capable,
            versions=versions,
            cc_mode=cc_mode,
            cpu_tee=cpu_tee,
        )

        fleet_node_request.additional_properties = d
        return fleet_node_request

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
