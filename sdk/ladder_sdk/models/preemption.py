from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Preemption")


@_attrs_define
class Preemption:
    """Spot work taken back for on-demand or reserved work: the notice (usage stopped there), the deadline to save by,
    the checkpoint it went back to and the work lost since, and whether it was requeued and placed again.

        Attributes:
            noticed_at (datetime.datetime): The notice: its usage stopped here.
            deadline (datetime.datetime): Killed if still running then (the notice period later).
            lost_seconds (str): noticed_at less checkpoint_at, as a decimal string.
            checkpoint_at (datetime.datetime | None | Unset): Its last checkpoint at the notice.
            requeued (bool | Unset):
            resumed_at (datetime.datetime | None | Unset): When the requeued work was placed again.
    """

    noticed_at: datetime.datetime
    deadline: datetime.datetime
    lost_seconds: str
    checkpoint_at: datetime.datetime | None | Unset = UNSET
    requeued: bool | Unset = UNSET
    resumed_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        noticed_at = self.noticed_at.isoformat()

        deadline = self.deadline.isoformat()

        lost_seconds = self.lost_seconds

        checkpoint_at: None | str | Unset
        if isinstance(self.checkpoint_at, Unset):
            checkpoint_at = UNSET
        elif isinstance(self.checkpoint_at, datetime.datetime):
            checkpoint_at = self.checkpoint_at.isoformat()
        else:
            checkpoint_at = self.checkpoint_at

        requeued = self.requeued

        resumed_at: None | str | Unset
        if isinstance(self.resumed_at, Unset):
            resumed_at = UNSET
        elif isinstance(self.resumed_at, datetime.datetime):
            resumed_at = self.resumed_at.isoformat()
        else:
            resumed_at = self.resumed_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "noticed_at": noticed_at,
                "deadline": deadline,
                "lost_seconds": lost_seconds,
            }
        )
        if checkpoint_at is not UNSET:
            field_dict["checkpoint_at"] = checkpoint_at
        if requeued is not UNSET:
            field_dict["requeued"] = requeued
        if resumed_at is not UNSET:
            field_dict["resumed_at"] = resumed_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        noticed_at = datetime.datetime.fromisoformat(d.pop("noticed_at"))

        deadline = datetime.datetime.fromisoformat(d.pop("deadline"))

        lost_seconds = d.pop("lost_seconds")

        def _parse_checkpoint_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                checkpoint_at_type_0 = datetime.datetime.fromisoformat(data)

                return checkpoint_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        checkpoint_at = _parse_checkpoint_at(d.pop("checkpoint_at", UNSET))

        requeued = d.pop("requeued", UNSET)

        def _parse_resumed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                resumed_at_type_0 = datetime.datetime.fromisoformat(data)

                return resumed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        resumed_at = _parse_resumed_at(d.pop("resumed_at", UNSET))

        preemption = cls(
            noticed_at=noticed_at,
            deadline=deadline,
            lost_seconds=lost_seconds,
            checkpoint_at=checkpoint_at,
            requeued=requeued,
            resumed_at=resumed_at,
        )

        preemption.additional_properties = d
        return preemption

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
