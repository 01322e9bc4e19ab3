from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Notification")


@_attrs_define
class Notification:
    """
    Attributes:
        id (int):
        kind (str):
        subject (str):
        body (str):
        created_at (datetime.datetime):
        emailed_to (Any):
    """

    id: int
    kind: str
    subject: str
    body: str
    created_at: datetime.datetime
    emailed_to: Any
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        subject = self.subject

        body = self.body

        created_at = self.created_at.isoformat()

        emailed_to = self.emailed_to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "kind": kind,
                "subject": subject,
                "body": body,
                "created_at": created_at,
                "emailed_to": emailed_to,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        subject = d.pop("subject")

        body = d.pop("body")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        emailed_to = d.pop("emailed_to")

        notification = cls(
            id=id,
            kind=kind,
            subject=subject,
            body=body,
            created_at=created_at,
            emailed_to=emailed_to,
        )

        notification.additional_properties = d
        return notification

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
