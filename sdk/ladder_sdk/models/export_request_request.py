from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.export_format_enum import ExportFormatEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="ExportRequestRequest")


@_attrs_define
class ExportRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            to (str): Last UTC day, YYYY-MM-DD (inclusive).
            from_ (str): First UTC day, YYYY-MM-DD.
            tenant (None | str | Unset): A tenant's slug.
            detail (bool | Unset):  Default: False.
            format_ (ExportFormatEnum | Unset): * `csv` - csv
                * `parquet` - parquet Default: ExportFormatEnum.CSV.
    """

    to: str
    from_: str
    tenant: None | str | Unset = UNSET
    detail: bool | Unset = False
    format_: ExportFormatEnum | Unset = ExportFormatEnum.CSV
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        to = self.to

        from_ = self.from_

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        detail = self.detail

        format_: str | Unset = UNSET
        if not isinstance(self.format_, Unset):
            format_ = self.format_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "to": to,
                "from": from_,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if detail is not UNSET:
            field_dict["detail"] = detail
        if format_ is not UNSET:
            field_dict["format"] = format_

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        to = d.pop("to")

        from_ = d.pop("from")

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))

        detail = d.pop("detail", UNSET)

        _format_ = d.pop("format", UNSET)
        format_: ExportFormatEnum | Unset
        if isinstance(_format_, Unset):
            format_ = UNSET
        else:
            format_ = ExportFormatEnum(_format_)

        export_request_request = cls(
            to=to,
            from_=from_,
            tenant=tenant,
            detail=detail,
            format_=format_,
        )

        export_request_request.additional_properties = d
        return export_request_request

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
