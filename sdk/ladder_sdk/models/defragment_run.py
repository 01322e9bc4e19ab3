from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.reconciliation_state_enum import ReconciliationStateEnum
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.defragment_step import DefragmentStep


T = TypeVar("T", bound="DefragmentRun")


@_attrs_define
class DefragmentRun:
    """
    Attributes:
        id (int):
        ordered_by (str):
        steps (list[DefragmentStep]):
        state (ReconciliationStateEnum | Unset): * `running` - Running
            * `done` - Done
            * `failed` - Failed
        created_at (datetime.datetime | Unset):
        updated_at (datetime.datetime | Unset):
        finished_at (datetime.datetime | None | Unset):
    """

    id: int
    ordered_by: str
    steps: list[DefragmentStep]
    state: ReconciliationStateEnum | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    updated_at: datetime.datetime | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        ordered_by = self.ordered_by

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        state: str | Unset = UNSET
        if not isinstance(self.state, Unset):
            state = self.state.value

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        updated_at: str | Unset = UNSET
        if not isinstance(self.updated_at, Unset):
            updated_at = self.updated_at.isoformat()

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "ordered_by": ordered_by,
                "steps": steps,
            }
        )
        if state is not UNSET:
            field_dict["state"] = state
        if created_at is not UNSET:
            field_dict["created_at"] = created_at
        if updated_at is not UNSET:
            field_dict["updated_at"] = updated_at
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.defragment_step import DefragmentStep

        d = dict(src_dict)
        id = d.pop("id")

        ordered_by = d.pop("ordered_by")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = DefragmentStep.from_dict(steps_item_data)

            steps.append(steps_item)

        _state = d.pop("state", UNSET)
        state: ReconciliationStateEnum | Unset
        if isinstance(_state, Unset):
            state = UNSET
        else:
            state = ReconciliationStateEnum(_state)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        _updated_at = d.pop("updated_at", UNSET)
        updated_at: datetime.datetime | Unset
        if isinstance(_updated_at, Unset):
            updated_at = UNSET
        else:
            updated_at = datetime.datetime.fromisoformat(_updated_at)

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        defragment_run = cls(
            id=id,
            ordered_by=ordered_by,
            steps=steps,
            state=state,
            created_at=created_at,
            updated_at=updated_at,
            finished_at=finished_at,
        )

        defragment_run.additional_properties = d
        return defragment_run

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
