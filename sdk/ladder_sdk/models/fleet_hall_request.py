from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fleet_node_request import FleetNodeRequest


T = TypeVar("T", bound="FleetHallRequest")


@_attrs_define
class FleetHallRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            code (str):
            fenced_for (None | str): null, or the jurisdiction whose sovereign tenants alone may use the hall.
            nodes (list[FleetNodeRequest]):
    """

    code: str
    fenced_for: None | str
    nodes: list[FleetNodeRequest]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        fenced_for: None | str
        fenced_for = self.fenced_for

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "fenced_for": fenced_for,
                "nodes": nodes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fleet_node_request import FleetNodeRequest

        d = dict(src_dict)
        code = d.pop("code")

        def _parse_fenced_for(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        fenced_for = _parse_fenced_for(d.pop("fenced_for"))

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = FleetNodeRequest.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        fleet_hall_request = cls(
            code=code,
            fenced_for=fenced_for,
            nodes=nodes,
        )

        fleet_hall_request.additional_properties = d
        return fleet_hall_request

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
