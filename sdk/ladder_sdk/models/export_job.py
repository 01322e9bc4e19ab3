from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.export_job_state_enum import ExportJobStateEnum

T = TypeVar("T", bound="ExportJob")


@_attrs_define
class ExportJob:
    """
    Attributes:
        id (int):
        state (ExportJobStateEnum): * `pending` - Pending
            * `running` - Running
            * `done` - Done
            * `failed` - Failed
        date_from (datetime.date):
        date_to (datetime.date): Inclusive: the last UTC day exported.
        tenant (str):
        detail (bool):
        format_ (str):
        requested_by (str):
        created_at (datetime.datetime):
        finished_at (datetime.datetime | None):
        rows (int | None):
        sha256 (str):
        error (str):
        download (None | str):
        signature (None | str):
    """

    id: int
    state: ExportJobStateEnum
    date_from: datetime.date
    date_to: datetime.date
    tenant: str
    detail: bool
    format_: str
    requested_by: str
    created_at: datetime.datetime
    finished_at: datetime.datetime | None
    rows: int | None
    sha256: str
    error: str
    download: None | str
    signature: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state.value

        date_from = self.date_from.isoformat()

        date_to = self.date_to.isoformat()

        tenant = self.tenant

        detail = self.detail

        format_ = self.format_

        requested_by = self.requested_by

        created_at = self.created_at.isoformat()

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        rows: int | None
        rows = self.rows

        sha256 = self.sha256

        error = self.error

        download: None | str
        download = self.download

        signature: None | str
        signature = self.signature

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "state": state,
                "date_from": date_from,
                "date_to": date_to,
                "tenant": tenant,
                "detail": detail,
                "format": format_,
                "requested_by": requested_by,
                "created_at": created_at,
                "finished_at": finished_at,
                "rows": rows,
                "sha256": sha256,
                "error": error,
                "download": download,
                "signature": signature,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        state = ExportJobStateEnum(d.pop("state"))

        date_from = datetime.date.fromisoformat(d.pop("date_from"))

        date_to = datetime.date.fromisoformat(d.pop("date_to"))

        tenant = d.pop("tenant")

        detail = d.pop("detail")

        format_ = d.pop("format")

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

        def _parse_rows(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        rows = _parse_rows(d.pop("rows"))

        sha256 = d.pop("sha256")

        error = d.pop("error")

        def _parse_download(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        download = _parse_download(d.pop("download"))

        def _parse_signature(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        signature = _parse_signature(d.pop("signature"))

        export_job = cls(
            id=id,
            state=state,
            date_from=date_from,
            date_to=date_to,
            tenant=tenant,
            detail=detail,
            format_=format_,
            requested_by=requested_by,
            created_at=created_at,
            finished_at=finished_at,
            rows=rows,
            sha256=sha256,
            error=error,
            download=download,
            signature=signature,
        )

        export_job.additional_properties = d
        return export_job

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
