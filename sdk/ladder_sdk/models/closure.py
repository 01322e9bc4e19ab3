from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.closure_step_enum import ClosureStepEnum

T = TypeVar("T", bound="Closure")


@_attrs_define
class Closure:
    """
    Attributes:
        id (int):
        state (str): The tenant's state: `closing`.
        step (ClosureStepEnum): * `stopping` - Stopping
            * `invoicing` - Invoicing
            * `exporting` - Exporting
            * `scheduling` - Scheduling
            * `waiting` - Waiting
            * `closed` - Closed
        requested_by (str):
        requested_at (datetime.datetime):
        updated_at (datetime.datetime): When the step last moved or was tried.
        attempts (int): Runs of steps so far (retries included).
        last_error (str):
        closes_at (datetime.datetime | None):
        allocations_stopped (int):
        final_invoice (int | None): Id of the final invoice (a data asset, category invoice).
        export (int | None): Id of the export bundle (a data asset: JSON lines); download it before `closes_at`.
        report (Any):
    """

    id: int
    state: str
    step: ClosureStepEnum
    requested_by: str
    requested_at: datetime.datetime
    updated_at: datetime.datetime
    attempts: int
    last_error: str
    closes_at: datetime.datetime | None
    allocations_stopped: int
    final_invoice: int | None
    export: int | None
    report: Any
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state

        step = self.step.value

        requested_by = self.requested_by

        requested_at = self.requested_at.isoformat()

        updated_at = self.updated_at.isoformat()

        attempts = self.attempts

        last_error = self.last_error

        closes_at: None | str
        if isinstance(self.closes_at, datetime.datetime):
            closes_at = self.closes_at.isoformat()
        else:
            closes_at = self.closes_at

        allocations_stopped = self.allocations_stopped

        final_invoice: int | None
        final_invoice = self.final_invoice

        export: int | None
        export = self.export

        report = self.report

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "state": state,
                "step": step,
                "requested_by": requested_by,
                "requested_at": requested_at,
                "updated_at": updated_at,
                "attempts": attempts,
                "last_error": last_error,
                "closes_at": closes_at,
                "allocations_stopped": allocations_stopped,
                "final_invoice": final_invoice,
                "export": export,
                "report": report,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        state = d.pop("state")

        step = ClosureStepEnum(d.pop("step"))

        requested_by = d.pop("requested_by")

        requested_at = datetime.datetime.fromisoformat(d.pop("requested_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        attempts = d.pop("attempts")

        last_error = d.pop("last_error")

        def _parse_closes_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                closes_at_type_0 = datetime.datetime.fromisoformat(data)

                return closes_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        closes_at = _parse_closes_at(d.pop("closes_at"))

        allocations_stopped = d.pop("allocations_stopped")

        def _parse_final_invoice(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        final_invoice = _parse_final_invoice(d.pop("final_invoice"))

        def _parse_export(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        export = _parse_export(d.pop("export"))

        report = d.pop("report")

        closure = cls(
            id=id,
            state=state,
            step=step,
            requested_by=requested_by,
            requested_at=requested_at,
            updated_at=updated_at,
            attempts=attempts,
            last_error=last_error,
            closes_at=closes_at,
            allocations_stopped=allocations_stopped,
            final_invoice=final_invoice,
            export=export,
            report=report,
        )

        closure.additional_properties = d
        return closure

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
