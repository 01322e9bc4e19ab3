from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AuditCheckpoint")


@_attrs_define
class AuditCheckpoint:
    """
    Attributes:
        seq (int):
        hash_ (str):
        at (datetime.datetime):
        key_id (str):
        signature (str):
    """

    seq: int
    hash_: str
    at: datetime.datetime
    key_id: str
    signature: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        hash_ = self.hash_

        at = self.at.isoformat()

        key_id = self.key_id

        signature = self.signature

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "seq": seq,
                "hash": hash_,
                "at": at,
                "key_id": key_id,
                "signature": signature,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        seq = d.pop("seq")

        hash_ = d.pop("hash")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        key_id = d.pop("key_id")

        signature = d.pop("signature")

        audit_checkpoint = cls(
            seq=seq,
            hash_=hash_,
            at=at,
            key_id=key_id,
            signature=signature,
        )

        audit_checkpoint.additional_properties = d
        return audit_checkpoint

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
