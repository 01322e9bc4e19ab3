from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AuditVerify")


@_attrs_define
class AuditVerify:
    """
    Attributes:
        ok (bool):
        count (int): Events verified before the first bad one (all, when ok).
        bad_seq (int | None):
        reason (None | str):
        message (str):
    """

    ok: bool
    count: int
    bad_seq: int | None
    reason: None | str
    message: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ok = self.ok

        count = self.count

        bad_seq: int | None
        bad_seq = self.bad_seq

        reason: None | str
        reason = self.reason

        message = self.message

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ok": ok,
                "count": count,
                "bad_seq": bad_seq,
                "reason": reason,
                "message": message,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        ok = d.pop("ok")

        count = d.pop("count")

        def _parse_bad_seq(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        bad_seq = _parse_bad_seq(d.pop("bad_seq"))

        def _parse_reason(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reason = _parse_reason(d.pop("reason"))

        message = d.pop("message")

        audit_verify = cls(
            ok=ok,
            count=count,
            bad_seq=bad_seq,
            reason=reason,
            message=message,
        )

        audit_verify.additional_properties = d
        return audit_verify

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
