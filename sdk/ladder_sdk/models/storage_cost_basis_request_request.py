from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.storage_kind_enum import StorageKindEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="StorageCostBasisRequestRequest")


@_attrs_define
class StorageCostBasisRequestRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            region (str):
            storage_kind (StorageKindEnum): * `filesystem` - Filesystem
                * `block` - Block
                * `snapshot` - Snapshot
            effective_from (datetime.datetime):
            cost_per_gb_month (str): Per provisioned GB per 730 hours.
            currency (str | Unset): ISO code in lower case. Default: 'usd'.
    """

    region: str
    storage_kind: StorageKindEnum
    effective_from: datetime.datetime
    cost_per_gb_month: str
    currency: str | Unset = "usd"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        region = self.region

        storage_kind = self.storage_kind.value

        effective_from = self.effective_from.isoformat()

        cost_per_gb_month = self.cost_per_gb_month

        currency = self.currency

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "region": region,
                "storage_kind": storage_kind,
                "effective_from": effective_from,
                "cost_per_gb_month": cost_per_gb_month,
            }
        )
        if currency is not UNSET:
            field_dict["currency"] = currency

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        region = d.pop("region")

        storage_kind = StorageKindEnum(d.pop("storage_kind"))

        effective_from = datetime.datetime.fromisoformat(d.pop("effective_from"))

        cost_per_gb_month = d.pop("cost_per_gb_month")

        currency = d.pop("currency", UNSET)

        storage_cost_basis_request_request = cls(
            region=region,
            storage_kind=storage_kind,
            effective_from=effective_from,
            cost_per_gb_month=cost_per_gb_month,
            currency=currency,
        )

        storage_cost_basis_request_request.additional_properties = d
        return storage_cost_basis_request_request

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
