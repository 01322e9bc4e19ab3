from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.hold_entry_state_enum import HoldEntryStateEnum

if TYPE_CHECKING:
    from ..models.held_volume import HeldVolume
    from ..models.preservation import Preservation


T = TypeVar("T", bound="HoldEntry")


@_attrs_define
class HoldEntry:
    """A hold of the register: the hold, what it preserves now and the erasure requests it suspends.

    Attributes:
        id (int):
        tenant (str):
        matter (str):
        reason (str):
        categories (list[str]): Categories covered; empty: every category. Among `dataset`, `checkpoint`, `job_log`,
            `inference_payload`, `export`, `usage_record`, `invoice`, `volume`.
        created_from (datetime.datetime | None):
        created_to (datetime.datetime | None):
        lock_until (datetime.datetime | None):
        state (HoldEntryStateEnum): * `active` - Active
            * `released` - Released
        created_at (datetime.datetime):
        created_by (str):
        released_at (datetime.datetime | None):
        released_by (str):
        release_reason (str):
        preserves (Preservation):
        suspends (list[int]): Ids of the erasure requests it suspends (data withheld).
        volumes (list[HeldVolume]): The volumes it preserves now (none once released).
    """

    id: int
    tenant: str
    matter: str
    reason: str
    categories: list[str]
    created_from: datetime.datetime | None
    created_to: datetime.datetime | None
    lock_until: datetime.datetime | None
    state: HoldEntryStateEnum
    created_at: datetime.datetime
    created_by: str
    released_at: datetime.datetime | None
    released_by: str
    release_reason: str
    preserves: Preservation
    suspends: list[int]
    volumes: list[HeldVolume]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        tenant = self.tenant

        matter = self.matter

        reason = self.reason

        categories = self.categories

        created_from: None | str
        if isinstance(self.created_from, datetime.datetime):
            created_from = self.created_from.isoformat()
        else:
            created_from = self.created_from

        created_to: None | str
        if isinstance(self.created_to, datetime.datetime):
            created_to = self.created_to.isoformat()
        else:
            created_to = self.created_to

        lock_until: None | str
        if isinstance(self.lock_until, datetime.datetime):
            lock_until = self.lock_until.isoformat()
        else:
            lock_until = self.lock_until

        state = self.state.value

        created_at = self.created_at.isoformat()

        created_by = self.created_by

        released_at: None | str
        if isinstance(self.released_at, datetime.datetime):
            released_at = self.released_at.isoformat()
        else:
            released_at = self.released_at

        released_by = self.released_by

        release_reason = self.release_reason

        preserves = self.preserves.to_dict()

        suspends = self.suspends

        volumes = []
        for volumes_item_data in self.volumes:
            volumes_item = volumes_item_data.to_dict()
            volumes.append(volumes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "tenant": tenant,
                "matter": matter,
                "reason": reason,
                "categories": categories,
                "created_from": created_from,
                "created_to": created_to,
                "lock_until": lock_until,
                "state": state,
                "created_at": created_at,
                "created_by": created_by,
                "released_at": released_at,
                "released_by": released_by,
                "release_reason": release_reason,
                "preserves": preserves,
                "suspends": suspends,
                "volumes": volumes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.held_volume import HeldVolume
        from ..models.preservation import Preservation

        d = dict(src_dict)
        id = d.pop("id")

        tenant = d.pop("tenant")

        matter = d.pop("matter")

        reason = d.pop("reason")

        categories = cast(list[str], d.pop("categories"))

        def _parse_created_from(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_from_type_0 = datetime.datetime.fromisoformat(data)

                return created_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_from = _parse_created_from(d.pop("created_from"))

        def _parse_created_to(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_to_type_0 = datetime.datetime.fromisoformat(data)

                return created_to_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_to = _parse_created_to(d.pop("created_to"))

        def _parse_lock_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lock_until_type_0 = datetime.datetime.fromisoformat(data)

                return lock_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        lock_until = _parse_lock_until(d.pop("lock_until"))

        state = HoldEntryStateEnum(d.pop("state"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        created_by = d.pop("created_by")

        def _parse_released_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                released_at_type_0 = datetime.datetime.fromisoformat(data)

                return released_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        released_at = _parse_released_at(d.pop("released_at"))

        released_by = d.pop("released_by")

        release_reason = d.pop("release_reason")

        preserves = Preservation.from_dict(d.pop("preserves"))

        suspends = cast(list[int], d.pop("suspends"))

        volumes = []
        _volumes = d.pop("volumes")
        for volumes_item_data in _volumes:
            volumes_item = HeldVolume.from_dict(volumes_item_data)

            volumes.append(volumes_item)

        hold_entry = cls(
            id=id,
            tenant=tenant,
            matter=matter,
            reason=reason,
            categories=categories,
            created_from=created_from,
            created_to=created_to,
            lock_until=lock_until,
            state=state,
            created_at=created_at,
            created_by=created_by,
            released_at=released_at,
            released_by=released_by,
            release_reason=release_reason,
            preserves=preserves,
            suspends=suspends,
            volumes=volumes,
        )

        hold_entry.additional_properties = d
        return hold_entry

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
