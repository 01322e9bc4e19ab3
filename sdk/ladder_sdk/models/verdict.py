from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.sealed import Sealed


T = TypeVar("T", bound="Verdict")


@_attrs_define
class Verdict:
    """
    Attributes:
        attestation (int):
        outcome (str):
        release (Sealed):
    """

    attestation: int
    outcome: str
    release: Sealed
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attestation = self.attestation

        outcome = self.outcome

        release = self.release.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attestation": attestation,
                "outcome": outcome,
                "release": release,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.sealed import Sealed

        d = dict(src_dict)
        attestation = d.pop("attestation")

        outcome = d.pop("outcome")

        release = Sealed.from_dict(d.pop("release"))

        verdict = cls(
            attestation=attestation,
            outcome=outcome,
            release=release,
        )

        verdict.additional_properties = d
        return verdict

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
