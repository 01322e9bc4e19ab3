from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ReconcileResult")


@_attrs_define
class ReconcileResult:
    """
    Attributes:
        looked_at (int): Allocations in flight whose driver was asked.
        observed_at (datetime.datetime):
    """

    looked_at: int
    observed_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        looked_at = self.looked_at

        observed_at = self.observed_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "looked_at": looked_at,
                "observed_at": observed_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        looked_at = d.pop("looked_at")

        observed_at = datetime.datetime.fromisoformat(d.pop("observed_at"))

        reconcile_result = cls(
            looked_at=looked_at,
            observed_at=observed_at,
        )

        reconcile_result.additional_properties = d
        return reconcile_result

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
