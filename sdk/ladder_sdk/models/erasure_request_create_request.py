from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ErasureRequestCreateRequest")


@_attrs_define
class ErasureRequestCreateRequest:
    """Name the assets, or categories and/or a creation date range (both: the named assets among those).
    Compliance staff name the tenant and the data subject (``on_behalf_of``); a tenant's owner erases its own
    tenant's data (another tenant's slug answers as an unknown one).

        Attributes:
            tenant (str | Unset): The tenant whose data is erased: required for compliance staff; a tenant's own by default.
            on_behalf_of (str | Unset): The data subject who asked: required for compliance staff, optional for a tenant.
                Default: ''.
            assets (list[int] | Unset): Asset ids (at most 1000; name categories and dates for more).
            categories (list[str] | Unset): Erase the tenant's assets of these categories. Among `dataset`, `checkpoint`,
                `job_log`, `inference_payload`, `export`, `usage_record`, `invoice`, `volume`.
            created_from (datetime.datetime | None | Unset):
            created_to (datetime.datetime | None | Unset):
    """

    tenant: str | Unset = UNSET
    on_behalf_of: str | Unset = ""
    assets: list[int] | Unset = UNSET
    categories: list[str] | Unset = UNSET
    created_from: datetime.datetime | None | Unset = UNSET
    created_to: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        on_behalf_of = self.on_behalf_of

        assets: list[int] | Unset = UNSET
        if not isinstance(self.assets, Unset):
            assets = self.assets

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
        field_dict.update({})
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if on_behalf_of is not UNSET:
            field_dict["on_behalf_of"] = on_behalf_of
        if assets is not UNSET:
            field_dict["assets"] = assets
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
        tenant = d.pop("tenant", UNSET)

        on_behalf_of = d.pop("on_behalf_of", UNSET)

        assets = cast(list[int], d.pop("assets", UNSET))

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

        erasure_request_create_request = cls(
            tenant=tenant,
            on_behalf_of=on_behalf_of,
            assets=assets,
            categories=categories,
            created_from=created_from,
            created_to=created_to,
        )

        erasure_request_create_request.additional_properties = d
        return erasure_request_create_request

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
