from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="HoldScopeRequest")


@_attrs_define
class HoldScopeRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            tenant (str): Tenant slug.
            categories (list[str] | Unset): Categories covered; empty or absent: every category. Among `dataset`,
                `checkpoint`, `job_log`, `inference_payload`, `export`, `usage_record`, `invoice`, `volume`.
            created_from (datetime.datetime | None | Unset): Covers assets created at or after (ISO-8601).
            created_to (datetime.datetime | None | Unset): Covers assets created at or before (ISO-8601).
    """

    tenant: str
    categories: list[str] | Unset = UNSET
    created_from: datetime.datetime | None | Unset = UNSET
    created_to: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        categories: list[str] | Unset = UNSET
        if not isinstance(self.categories, Unset):
            categories = self.categories

        created_from: None | str | Unset
        if isinstance(self.created_from, Unset):
            created_from = UNSET
        elif isinstance(self.created_from, datetime.datetime):
            created_from = self.created_from.isoformat()
        else:
            created_from = self.created_from

        created_to: None | str | Unset
        if isinstance(self.created_to, Unset):
            created_to = UNSET
        elif isinstance(self.created_to, datetime.datetime):
            created_to = self.created_to.isoformat()
        else:
            created_to = self.created_to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tenant": tenant,
            }
        )
        if categories is not UNSET:
            field_dict["categories"] = categories
        if created_from is not UNSET:
            field_dict["created_from"] = created_from
        if created_to is not UNSET:
            field_dict["created_to"] = created_to

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        categories = cast(list[str], d.pop("categories", UNSET))

        def _parse_created_from(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_from_type_0 = datetime.datetime.fromisoformat(data)

                return created_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_from = _parse_created_from(d.pop("created_from", UNSET))

        def _parse_created_to(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_to_type_0 = datetime.datetime.fromisoformat(data)

                return created_to_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        created_to = _parse_created_to(d.pop("created_to", UNSET))

        hold_scope_request = cls(
            tenant=tenant,
            categories=categories,
            created_from=created_from,
            created_to=created_to,
        )

        hold_scope_request.additional_properties = d
        return hold_scope_request

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
