from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Sync")


@_attrs_define
class Sync:
    """
    Attributes:
        nodes (int): GPU nodes imported.
        skipped (list[str]): Node objects not imported, and why.
        notes (list[str]): What imported nodes were imported without (their RDMA NICs), and why.
    """

    nodes: int
    skipped: list[str]
    notes: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        nodes = self.nodes

        skipped = self.skipped

        notes = self.notes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "nodes": nodes,
                "skipped": skipped,
                "notes": notes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        nodes = d.pop("nodes")

        skipped = cast(list[str], d.pop("skipped"))

        notes = cast(list[str], d.pop("notes"))

        sync = cls(
            nodes=nodes,
            skipped=skipped,
            notes=notes,
        )

        sync.additional_properties = d
        return sync

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
