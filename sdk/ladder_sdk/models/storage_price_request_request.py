from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.storage_kind_enum import StorageKindEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="StoragePriceRequestRequest")


@_attrs_define
class StoragePriceRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            region (str):
            storage_kind (StorageKindEnum): * `filesystem` - Filesystem
                * `block` - Block
                * `snapshot` - Snapshot
            per_gb_month (str): Price per provisioned GB per 730 hours.
            effective_from (datetime.datetime | Unset): Default: now. Never in the past.
    """

    region: str
    storage_kind: StorageKindEnum
    per_gb_month: str
    effective_from: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        region = self.region

        storage_kind = self.storage_kind.value

        per_gb_month = self.per_gb_month

        effective_from: str | Unset = UNSET
        if not isinstance(self.effective_from, Unset):
            effective_from = self.effective_from.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "region": region,
                "storage_kind": storage_kind,
                "per_gb_month": per_gb_month,
            }
        )
        if effective_from is not UNSET:
            field_dict["effective_from"] = effective_from

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        region = d.pop("region")

        storage_kind = StorageKindEnum(d.pop("storage_kind"))

        per_gb_month = d.pop("per_gb_month")

        _effective_from = d.pop("effective_from", UNSET)
        effective_from: datetime.datetime | Unset
        if isinstance(_effective_from, Unset):
            effective_from = UNSET
        else:
            effective_from = datetime.datetime.fromisoformat(_effective_from)

        storage_price_request_request = cls(
            region=region,
            storage_kind=storage_kind,
            per_gb_month=per_gb_month,
            effective_from=effective_from,
        )

        storage_price_request_request.additional_properties = d
        return storage_price_request_request

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
