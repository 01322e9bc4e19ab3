from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.reconciliation_state_enum import ReconciliationStateEnum

T = TypeVar("T", bound="RunDetail")


@_attrs_define
class RunDetail:
    """
    Attributes:
        id (int):
        month (str): YYYY-MM (UTC).
        tenant (str):
        state (ReconciliationStateEnum): * `running` - Running
            * `done` - Done
            * `failed` - Failed Default: ReconciliationStateEnum.RUNNING.
        requested_by (str):
        created_at (datetime.datetime):
        finished_at (datetime.datetime | None):
        mode (str): stripe or ledger_only.
        is_clean (bool | None): No unexplained difference (null until done).
        unexplained (int):
        error (str):
        result (Any):
    """

    id: int
    month: str
    tenant: str
    requested_by: str
    created_at: datetime.datetime
    finished_at: datetime.datetime | None
    mode: str
    is_clean: bool | None
    unexplained: int
    error: str
    result: Any
    state: ReconciliationStateEnum = ReconciliationStateEnum.RUNNING
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        month = self.month

        tenant = self.tenant

        state = self.state.value

        requested_by = self.requested_by

        created_at = self.created_at.isoformat()

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        mode = self.mode

        is_clean: bool | None
        is_clean = self.is_clean

        unexplained = self.unexplained

        error = self.error

        result = self.result

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "month": month,
                "tenant": tenant,
                "state": state,
                "requested_by": requested_by,
                "created_at": created_at,
                "finished_at": finished_at,
                "mode": mode,
                "is_clean": is_clean,
                "unexplained": unexplained,
                "error": error,
                "result": result,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        month = d.pop("month")

        tenant = d.pop("tenant")

        state = ReconciliationStateEnum(d.pop("state"))

        requested_by = d.pop("requested_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        mode = d.pop("mode")

        def _parse_is_clean(data: object) -> bool | None:
            if data is None:
                return data
            return cast(bool | None, data)

        is_clean = _parse_is_clean(d.pop("is_clean"))

        unexplained = d.pop("unexplained")

        error = d.pop("error")

        result = d.pop("result")

        run_detail = cls(
            id=id,
            month=month,
            tenant=tenant,
            state=state,
            requested_by=requested_by,
            created_at=created_at,
            finished_at=finished_at,
            mode=mode,
            is_clean=is_clean,
            unexplained=unexplained,
            error=error,
            result=result,
        )

        run_detail.additional_properties = d
        return run_detail

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
