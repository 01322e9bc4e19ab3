from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Fault")


@_attrs_define
class Fault:
    """A provider fault under the allocation and the work it cost (goodput lost: not billed).

    Attributes:
        node (str):
        fault_at (datetime.datetime): When the node went bad (the condition's transition, else detection).
        detected_at (datetime.datetime):
        lost_seconds (str): fault_at less checkpoint_at, as a decimal string.
        outcome (str): restarted (placed again) or failed (no room, or not a job).
        cause (str | Unset): The node condition, or the operator's reason.
        checkpoint_at (datetime.datetime | None | Unset): What the work went back to (billed to).
        running_at (datetime.datetime | None | Unset): When the restarted gang ran again.
    """

    node: str
    fault_at: datetime.datetime
    detected_at: datetime.datetime
    lost_seconds: str
    outcome: str
    cause: str | Unset = UNSET
    checkpoint_at: datetime.datetime | None | Unset = UNSET
    running_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        fault_at = self.fault_at.isoformat()

        detected_at = self.detected_at.isoformat()

        lost_seconds = self.lost_seconds

        outcome = self.outcome

        cause = self.cause

        checkpoint_at: None | str | Unset
        if isinstance(self.checkpoint_at, Unset):
            checkpoint_at = UNSET
        elif isinstance(self.checkpoint_at, datetime.datetime):
            checkpoint_at = self.checkpoint_at.isoformat()
        else:
            checkpoint_at = self.checkpoint_at

        running_at: None | str | Unset
        if isinstance(self.running_at, Unset):
            running_at = UNSET
        elif isinstance(self.running_at, datetime.datetime):
            running_at = self.running_at.isoformat()
        else:
            running_at = self.running_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "node": node,
                "fault_at": fault_at,
                "detected_at": detected_at,
                "lost_seconds": lost_seconds,
                "outcome": outcome,
            }
        )
        if cause is not UNSET:
            field_dict["cause"] = cause
        if checkpoint_at is not UNSET:
            field_dict["checkpoint_at"] = checkpoint_at
        if running_at is not UNSET:
            field_dict["running_at"] = running_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        node = d.pop("node")

        fault_at = datetime.datetime.fromisoformat(d.pop("fault_at"))

        detected_at = datetime.datetime.fromisoformat(d.pop("detected_at"))

        lost_seconds = d.pop("lost_seconds")

        outcome = d.pop("outcome")

        cause = d.pop("cause", UNSET)

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

        def _parse_running_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                running_at_type_0 = datetime.datetime.fromisoformat(data)

                return running_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        running_at = _parse_running_at(d.pop("running_at", UNSET))

        fault = cls(
            node=node,
            fault_at=fault_at,
            detected_at=detected_at,
            lost_seconds=lost_seconds,
            outcome=outcome,
            cause=cause,
            checkpoint_at=checkpoint_at,
            running_at=running_at,
        )

        fault.additional_properties = d
        return fault

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
