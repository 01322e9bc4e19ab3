from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SshKey")


@_attrs_define
class SshKey:
    """
    Attributes:
        id (int):
        name (str):
        key_type (str):
        bits (int):
        fingerprint (str): OpenSSH's SHA256 fingerprint (ssh-keygen -l).
        public_key (str): One line: type, base64 and the comment, if any.
        created_by (str):
        created_at (datetime.datetime):
    """

    id: int
    name: str
    key_type: str
    bits: int
    fingerprint: str
    public_key: str
    created_by: str
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        key_type = self.key_type

        bits = self.bits

        fingerprint = self.fingerprint

        public_key = self.public_key

        created_by = self.created_by

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "key_type": key_type,
                "bits": bits,
                "fingerprint": fingerprint,
                "public_key": public_key,
                "created_by": created_by,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        key_type = d.pop("key_type")

        bits = d.pop("bits")

        fingerprint = d.pop("fingerprint")

        public_key = d.pop("public_key")

        created_by = d.pop("created_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        ssh_key = cls(
            id=id,
            name=name,
            key_type=key_type,
            bits=bits,
            fingerprint=fingerprint,
            public_key=public_key,
            created_by=created_by,
            created_at=created_at,
        )

        ssh_key.additional_properties = d
        return ssh_key

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
