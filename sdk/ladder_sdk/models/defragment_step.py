from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.move_status_enum import MoveStatusEnum
from ..models.moved_kind_enum import MovedKindEnum

T = TypeVar("T", bound="DefragmentStep")


@_attrs_define
class DefragmentStep:
    """
    Attributes:
        allocation (int):
        tenant (str):
        kind (MovedKindEnum): * `job` - job
            * `serverless` - serverless
        from_nodes (list[str]):
        to_nodes (list[str]):
        gpus (int): Devices moved: whole GPUs, MIG slices or soft shares.
        status (MoveStatusEnum): * `pending` - pending
            * `moving` - moving
            * `done` - done
            * `skipped` - skipped
            * `failed` - failed
        detail (str): Why a step was skipped or failed.
        started_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
    """

    allocation: int
    tenant: str
    kind: MovedKindEnum
    from_nodes: list[str]
    to_nodes: list[str]
    gpus: int
    status: MoveStatusEnum
    detail: str
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocation = self.allocation

        tenant = self.tenant

        kind = self.kind.value

        from_nodes = self.from_nodes

        to_nodes = self.to_nodes

        gpus = self.gpus

        status = self.status.value

        detail = self.detail

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

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
                "status": status,
                "detail": detail,
                "started_at": started_at,
                "finished_at": finished_at,
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

        status = MoveStatusEnum(d.pop("status"))

        detail = d.pop("detail")

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

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

        defragment_step = cls(
            allocation=allocation,
            tenant=tenant,
            kind=kind,
            from_nodes=from_nodes,
            to_nodes=to_nodes,
            gpus=gpus,
            status=status,
            detail=detail,
            started_at=started_at,
            finished_at=finished_at,
        )

        defragment_step.additional_properties = d
        return defragment_step

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
