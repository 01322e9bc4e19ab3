from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.blank_enum import BlankEnum
from ..models.category_enum import CategoryEnum
from ..models.data_asset_state_enum import DataAssetStateEnum
from ..models.shred_reason_enum import ShredReasonEnum

T = TypeVar("T", bound="DataAsset")


@_attrs_define
class DataAsset:
    """
    Attributes:
        id (int):
        name (str):
        category (CategoryEnum): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        region (str):
        size_bytes (int):
        created_at (datetime.datetime):
        location (str): Storage URI of the encrypted content.
        key_id (str): Fingerprint of the asset's data key.
        derived_from (list[int]): Ids of the assets this one was made from.
        derivatives (list[int]): Ids of the assets made from this one.
        state (DataAssetStateEnum): * `live` - Live
            * `shredding` - Shredding
            * `shredded` - Shredded
        shred_reason (BlankEnum | ShredReasonEnum):
        shred_after (datetime.datetime | None): End of the waiting period.
        shredded_at (datetime.datetime | None):
    """

    id: int
    name: str
    category: CategoryEnum
    region: str
    size_bytes: int
    created_at: datetime.datetime
    location: str
    key_id: str
    derived_from: list[int]
    derivatives: list[int]
    state: DataAssetStateEnum
    shred_reason: BlankEnum | ShredReasonEnum
    shred_after: datetime.datetime | None
    shredded_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        category = self.category.value

        region = self.region

        size_bytes = self.size_bytes

        created_at = self.created_at.isoformat()

        location = self.location

        key_id = self.key_id

        derived_from = self.derived_from

        derivatives = self.derivatives

        state = self.state.value

        shred_reason: str
        if isinstance(self.shred_reason, ShredReasonEnum):
            shred_reason = self.shred_reason.value
        else:
            shred_reason = self.shred_reason.value

        shred_after: None | str
        if isinstance(self.shred_after, datetime.datetime):
            shred_after = self.shred_after.isoformat()
        else:
            shred_after = self.shred_after

        shredded_at: None | str
        if isinstance(self.shredded_at, datetime.datetime):
            shredded_at = self.shredded_at.isoformat()
        else:
            shredded_at = self.shredded_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "category": category,
                "region": region,
                "size_bytes": size_bytes,
                "created_at": created_at,
                "location": location,
                "key_id": key_id,
                "derived_from": derived_from,
                "derivatives": derivatives,
                "state": state,
                "shred_reason": shred_reason,
                "shred_after": shred_after,
                "shredded_at": shredded_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        category = CategoryEnum(d.pop("category"))

        region = d.pop("region")

        size_bytes = d.pop("size_bytes")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        location = d.pop("location")

        key_id = d.pop("key_id")

        derived_from = cast(list[int], d.pop("derived_from"))

        derivatives = cast(list[int], d.pop("derivatives"))

        state = DataAssetStateEnum(d.pop("state"))

        def _parse_shred_reason(data: object) -> BlankEnum | ShredReasonEnum:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                shred_reason_type_0 = ShredReasonEnum(data)

                return shred_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, str):
                raise TypeError()
            shred_reason_type_1 = BlankEnum(data)

            return shred_reason_type_1

        shred_reason = _parse_shred_reason(d.pop("shred_reason"))

        def _parse_shred_after(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                shred_after_type_0 = datetime.datetime.fromisoformat(data)

                return shred_after_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        shred_after = _parse_shred_after(d.pop("shred_after"))

        def _parse_shredded_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                shredded_at_type_0 = datetime.datetime.fromisoformat(data)

                return shredded_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        shredded_at = _parse_shredded_at(d.pop("shredded_at"))

        data_asset = cls(
            id=id,
            name=name,
            category=category,
            region=region,
            size_bytes=size_bytes,
            created_at=created_at,
            location=location,
            key_id=key_id,
            derived_from=derived_from,
            derivatives=derivatives,
            state=state,
            shred_reason=shred_reason,
            shred_after=shred_after,
            shredded_at=shredded_at,
        )

        data_asset.additional_properties = d
        return data_asset

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
