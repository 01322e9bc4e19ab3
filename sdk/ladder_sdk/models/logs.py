from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.log_line import LogLine


T = TypeVar("T", bound="Logs")


@_attrs_define
class Logs:
    """
    Attributes:
        lines (list[LogLine]):
        next_since (datetime.datetime | None): Pass as since= to read only newer lines.
    """

    lines: list[LogLine]
    next_since: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        lines = []
        for lines_item_data in self.lines:
            lines_item = lines_item_data.to_dict()
            lines.append(lines_item)

        next_since: None | str
        if isinstance(self.next_since, datetime.datetime):
            next_since = self.next_since.isoformat()
        else:
            next_since = self.next_since

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "lines": lines,
                "next_since": next_since,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.log_line import LogLine

        d = dict(src_dict)
        lines = []
        _lines = d.pop("lines")
        for lines_item_data in _lines:
            lines_item = LogLine.from_dict(lines_item_data)

            lines.append(lines_item)

        def _parse_next_since(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_since_type_0 = datetime.datetime.fromisoformat(data)

                return next_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_since = _parse_next_since(d.pop("next_since"))

        logs = cls(
            lines=lines,
            next_since=next_since,
        )

        logs.additional_properties = d
        return logs

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
