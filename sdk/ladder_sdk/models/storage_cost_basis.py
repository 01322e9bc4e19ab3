from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.storage_kind_enum import StorageKindEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="StorageCostBasis")


@_attrs_define
class StorageCostBasis:
    """
    Attributes:
        id (int):
        region (str):
        storage_kind (StorageKindEnum): * `filesystem` - Filesystem
            * `block` - Block
            * `snapshot` - Snapshot
        effective_from (datetime.datetime):
        cost_per_gb_month (str):
        currency (str | Unset):
        created_at (datetime.datetime | Unset):
    """

    id: int
    region: str
    storage_kind: StorageKindEnum
    effective_from: datetime.datetime
    cost_per_gb_month: str
    currency: str | Unset = UNSET
    created_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        region = self.region

        storage_kind = self.storage_kind.value

        effective_from = self.effective_from.isoformat()

        cost_per_gb_month = self.cost_per_gb_month

        currency = self.currency

        created_at: str | Unset = UNSET
        if not isinstance(self.created_at, Unset):
            created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "region": region,
                "storage_kind": storage_kind,
                "effective_from": effective_from,
                "cost_per_gb_month": cost_per_gb_month,
            }
        )
        if currency is not UNSET:
            field_dict["currency"] = currency
        if created_at is not UNSET:
            field_dict["created_at"] = created_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        region = d.pop("region")

        storage_kind = StorageKindEnum(d.pop("storage_kind"))

        effective_from = datetime.datetime.fromisoformat(d.pop("effective_from"))

        cost_per_gb_month = d.pop("cost_per_gb_month")

        currency = d.pop("currency", UNSET)

        _created_at = d.pop("created_at", UNSET)
        created_at: datetime.datetime | Unset
        if isinstance(_created_at, Unset):
            created_at = UNSET
        else:
            created_at = datetime.datetime.fromisoformat(_created_at)

        storage_cost_basis = cls(
            id=id,
            region=region,
            storage_kind=storage_kind,
            effective_from=effective_from,
            cost_per_gb_month=cost_per_gb_month,
            currency=currency,
            created_at=created_at,
        )

        storage_cost_basis.additional_properties = d
        return storage_cost_basis

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
