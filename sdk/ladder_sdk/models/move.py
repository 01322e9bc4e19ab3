from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.moved_kind_enum import MovedKindEnum

T = TypeVar("T", bound="Move")


@_attrs_define
class Move:
    """
    Attributes:
        allocation (int):
        tenant (str):
        kind (MovedKindEnum): * `job` - job
            * `serverless` - serverless
        from_nodes (list[str]):
        to_nodes (list[str]):
        gpus (int): Devices moved: whole GPUs, MIG slices or soft shares.
    """

    allocation: int
    tenant: str
    kind: MovedKindEnum
    from_nodes: list[str]
    to_nodes: list[str]
    gpus: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocation = self.allocation

        tenant = self.tenant

        kind = self.kind.value

        from_nodes = self.from_nodes

        to_nodes = self.to_nodes

        gpus = self.gpus

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocation": allocation,
                "tenant": tenant,
                "kind": kind,
                "from_nodes": from_nodes,
                "to_nodes": to_nodes,
                "gpus": gpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        allocation = d.pop("allocation")

        tenant = d.pop("tenant")

        kind = MovedKindEnum(d.pop("kind"))

        from_nodes = cast(list[str], d.pop("from_nodes"))

        to_nodes = cast(list[str], d.pop("to_nodes"))

        gpus = d.pop("gpus")

        move = cls(
            allocation=allocation,
            tenant=tenant,
            kind=kind,
            from_nodes=from_nodes,
            to_nodes=to_nodes,
            gpus=gpus,
        )

        move.additional_properties = d
        return move

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
