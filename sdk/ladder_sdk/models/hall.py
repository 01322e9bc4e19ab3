from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Hall")


@_attrs_define
class Hall:
    """
    Attributes:
        code (str):
        fenced_for (None | str):
    """

    code: str
    fenced_for: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        fenced_for: None | str
        fenced_for = self.fenced_for

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "fenced_for": fenced_for,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        code = d.pop("code")

        def _parse_fenced_for(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        fenced_for = _parse_fenced_for(d.pop("fenced_for"))

        hall = cls(
            code=code,
            fenced_for=fenced_for,
        )

        hall.additional_properties = d
        return hall

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
