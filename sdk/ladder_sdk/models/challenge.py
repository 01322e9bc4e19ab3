from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Challenge")


@_attrs_define
class Challenge:
    """
    Attributes:
        allocation (int):
        host (str):
        tee (str): The CPU TEE the host is declared with: the evidence must claim it.
        verifier (str):
        nonce (str): Put it in the evidence as eat_nonce; usable once, until expires_at.
        expires_at (datetime.datetime):
    """

    allocation: int
    host: str
    tee: str
    verifier: str
    nonce: str
    expires_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allocation = self.allocation

        host = self.host

        tee = self.tee

        verifier = self.verifier

        nonce = self.nonce

        expires_at = self.expires_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allocation": allocation,
                "host": host,
                "tee": tee,
                "verifier": verifier,
                "nonce": nonce,
                "expires_at": expires_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        allocation = d.pop("allocation")

        host = d.pop("host")

        tee = d.pop("tee")

        verifier = d.pop("verifier")

        nonce = d.pop("nonce")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        challenge = cls(
            allocation=allocation,
            host=host,
            tee=tee,
            verifier=verifier,
            nonce=nonce,
            expires_at=expires_at,
        )

        challenge.additional_properties = d
        return challenge

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
