from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.link_layer_enum import LinkLayerEnum

if TYPE_CHECKING:
    from ..models.fabric_isolation import FabricIsolation
    from ..models.fabric_node import FabricNode


T = TypeVar("T", bound="Fabric")


@_attrs_define
class Fabric:
    """
    Attributes:
        name (str):
        link_layer (LinkLayerEnum): * `infiniband` - infiniband
            * `roce` - roce
        isolation (FabricIsolation):
        rails (list[int]): The rails every node has a NIC on.
        nodes (list[FabricNode]):
    """

    name: str
    link_layer: LinkLayerEnum
    isolation: FabricIsolation
    rails: list[int]
    nodes: list[FabricNode]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        link_layer = self.link_layer.value

        isolation = self.isolation.to_dict()

        rails = self.rails

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "link_layer": link_layer,
                "isolation": isolation,
                "rails": rails,
                "nodes": nodes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fabric_isolation import FabricIsolation
        from ..models.fabric_node import FabricNode

        d = dict(src_dict)
        name = d.pop("name")

        link_layer = LinkLayerEnum(d.pop("link_layer"))

        isolation = FabricIsolation.from_dict(d.pop("isolation"))

        rails = cast(list[int], d.pop("rails"))

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = FabricNode.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        fabric = cls(
            name=name,
            link_layer=link_layer,
            isolation=isolation,
            rails=rails,
            nodes=nodes,
        )

        fabric.additional_properties = d
        return fabric

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
