from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ErasureScope")


@_attrs_define
class ErasureScope:
    """
    Attributes:
        assets (list[int]):
        categories (list[str]): Categories asked for. Among `dataset`, `checkpoint`, `job_log`, `inference_payload`,
            `export`, `usage_record`, `invoice`, `volume`.
        created_from (datetime.datetime | None):
        created_to (datetime.datetime | None):
    """

    assets: list[int]
    categories: list[str]
    created_from: datetime.datetime | None
    created_to: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assets = self.assets

        categories = self.categories

        created_from: None | str
        if isinstance(self.created_from, datetime.datetime):
            created_from = self.created_from.isoformat()
        else:
            created_from = self.created_from

        created_to: None | str
        if isinstance(self.created_to, datetime.datetime):
            created_to = self.created_to.isoformat()
        else:
            created_to = self.created_to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assets": assets,
                "categories": categories,
                "created_from": created_from,
                "created_to": created_to,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        assets = cast(list[int], d.pop("assets"))

        categories = cast(list[str], d.pop("categories"))

        def _parse_created_from(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_from_type_0 = datetime.datetime.fromisoformat(data)

                return created_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_from = _parse_created_from(d.pop("created_from"))

        def _parse_created_to(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_to_type_0 = datetime.datetime.fromisoformat(data)

                return created_to_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_to = _parse_created_to(d.pop("created_to"))

        erasure_scope = cls(
            assets=assets,
            categories=categories,
            created_from=created_from,
            created_to=created_to,
        )

        erasure_scope.additional_properties = d
        return erasure_scope

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
