from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.topology_enum import TopologyEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="GangRequest")


@_attrs_define
class GangRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            size (int):
            topology (None | TopologyEnum | Unset):
    """

    size: int
    topology: None | TopologyEnum | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        size = self.size

        topology: None | str | Unset
        if isinstance(self.topology, Unset):
            topology = UNSET
        elif isinstance(self.topology, TopologyEnum):
            topology = self.topology.value
        else:
            topology = self.topology

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "size": size,
            }
        )
        if topology is not UNSET:
            field_dict["topology"] = topology

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        size = d.pop("size")

        def _parse_topology(data: object) -> None | TopologyEnum | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                topology_type_0 = TopologyEnum(data)

                return topology_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TopologyEnum | Unset, data)

        topology = _parse_topology(d.pop("topology", UNSET))

        gang_request = cls(
            size=size,
            topology=topology,
        )

        gang_request.additional_properties = d
        return gang_request

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
