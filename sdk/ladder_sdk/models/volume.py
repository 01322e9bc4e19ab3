from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.volume_kind_enum import VolumeKindEnum
from ..models.volume_state_enum import VolumeStateEnum

T = TypeVar("T", bound="Volume")


@_attrs_define
class Volume:
    """
    Attributes:
        id (int):
        name (str):
        region (str):
        kind (VolumeKindEnum): * `filesystem` - filesystem
            * `block` - block
        size_gb (int):
        used_gb (int | None):
        state (VolumeStateEnum): * `creating` - creating
            * `available` - available
            * `attached` - attached
            * `deleting` - deleting
            * `deleted` - deleted
        access_mode (str): ReadWriteMany (filesystem) or ReadWriteOnce (block).
        attached_to (list[int]): Ids of the allocations that mount it now.
        snapshots (int): Snapshots it has.
        restored_from (int | None):
        data_asset (int | None): Its data asset (retention, holds, erasure).
        key_id (str): Fingerprint of its own data key; empty once shredded.
        created_at (datetime.datetime):
        state_changed_at (datetime.datetime):
    """

    id: int
    name: str
    region: str
    kind: VolumeKindEnum
    size_gb: int
    used_gb: int | None
    state: VolumeStateEnum
    access_mode: str
    attached_to: list[int]
    snapshots: int
    restored_from: int | None
    data_asset: int | None
    key_id: str
    created_at: datetime.datetime
    state_changed_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        region = self.region

        kind = self.kind.value

        size_gb = self.size_gb

        used_gb: int | None
        used_gb = self.used_gb

        state = self.state.value

        access_mode = self.access_mode

        attached_to = self.attached_to

        snapshots = self.snapshots

        restored_from: int | None
        restored_from = self.restored_from

        data_asset: int | None
        data_asset = self.data_asset

        key_id = self.key_id

        created_at = self.created_at.isoformat()

        state_changed_at = self.state_changed_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "region": region,
                "kind": kind,
                "size_gb": size_gb,
                "used_gb": used_gb,
                "state": state,
                "access_mode": access_mode,
                "attached_to": attached_to,
                "snapshots": snapshots,
                "restored_from": restored_from,
                "data_asset": data_asset,
                "key_id": key_id,
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

        region = d.pop("region")

        kind = VolumeKindEnum(d.pop("kind"))

        size_gb = d.pop("size_gb")

        def _parse_used_gb(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        used_gb = _parse_used_gb(d.pop("used_gb"))

        state = VolumeStateEnum(d.pop("state"))

        access_mode = d.pop("access_mode")

        attached_to = cast(list[int], d.pop("attached_to"))

        snapshots = d.pop("snapshots")

        def _parse_restored_from(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        restored_from = _parse_restored_from(d.pop("restored_from"))

        def _parse_data_asset(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        data_asset = _parse_data_asset(d.pop("data_asset"))

        key_id = d.pop("key_id")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        state_changed_at = datetime.datetime.fromisoformat(d.pop("state_changed_at"))

        volume = cls(
            id=id,
            name=name,
            region=region,
            kind=kind,
            size_gb=size_gb,
            used_gb=used_gb,
            state=state,
            access_mode=access_mode,
            attached_to=attached_to,
            snapshots=snapshots,
            restored_from=restored_from,
            data_asset=data_asset,
            key_id=key_id,
            created_at=created_at,
            state_changed_at=state_changed_at,
        )

        volume.additional_properties = d
        return volume

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
