from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.snapshot_state_enum import SnapshotStateEnum

T = TypeVar("T", bound="Snapshot")


@_attrs_define
class Snapshot:
    """
    Attributes:
        id (int):
        name (str):
        volume (int):
        size_gb (int):
        state (SnapshotStateEnum): * `creating` - creating
            * `ready` - ready
            * `deleting` - deleting
            * `deleted` - deleted Default: SnapshotStateEnum.CREATING.
        created_at (datetime.datetime):
        state_changed_at (datetime.datetime):
    """

    id: int
    name: str
    volume: int
    size_gb: int
    created_at: datetime.datetime
    state_changed_at: datetime.datetime
    state: SnapshotStateEnum = SnapshotStateEnum.CREATING
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        volume = self.volume

        size_gb = self.size_gb

        state = self.state.value

        created_at = self.created_at.isoformat()

        state_changed_at = self.state_changed_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "volume": volume,
                "size_gb": size_gb,
                "state": state,
                "created_at": created_at,
                "state_changed_at": state_changed_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        volume = d.pop("volume")

        size_gb = d.pop("size_gb")

        state = SnapshotStateEnum(d.pop("state"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        state_changed_at = datetime.datetime.fromisoformat(d.pop("state_changed_at"))

        snapshot = cls(
            id=id,
            name=name,
            volume=volume,
            size_gb=size_gb,
            state=state,
            created_at=created_at,
            state_changed_at=state_changed_at,
        )

        snapshot.additional_properties = d
        return snapshot

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
