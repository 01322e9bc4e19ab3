from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.category_enum import CategoryEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="DataAssetCreateRequest")


@_attrs_define
class DataAssetCreateRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str):
            category (CategoryEnum): * `dataset` - Dataset
                * `checkpoint` - Checkpoint
                * `job_log` - Job Log
                * `inference_payload` - Inference Payload
                * `export` - Export
                * `usage_record` - Usage Record
                * `invoice` - Invoice
                * `volume` - Volume
            region (str): Region code; the tenant's residency must allow it.
            size_bytes (int | None | Unset): Required without content; with content, it must match (or be left out).
            derived_from (list[int] | Unset): Ids of this tenant's assets this one was made from.
            content (None | str | Unset): The content itself, base64 (small: register larger data by size only). Stored
                encrypted.
    """

    name: str
    category: CategoryEnum
    region: str
    size_bytes: int | None | Unset = UNSET
    derived_from: list[int] | Unset = UNSET
    content: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        category = self.category.value

        region = self.region

        size_bytes: int | None | Unset
        if isinstance(self.size_bytes, Unset):
            size_bytes = UNSET
        else:
            size_bytes = self.size_bytes

        derived_from: list[int] | Unset = UNSET
        if not isinstance(self.derived_from, Unset):
            derived_from = self.derived_from

        content: None | str | Unset
        if isinstance(self.content, Unset):
            content = UNSET
        else:
            content = self.content

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "category": category,
                "region": region,
            }
        )
        if size_bytes is not UNSET:
            field_dict["size_bytes"] = size_bytes
        if derived_from is not UNSET:
            field_dict["derived_from"] = derived_from
        if content is not UNSET:
            field_dict["content"] = content

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        category = CategoryEnum(d.pop("category"))

        region = d.pop("region")

        def _parse_size_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_bytes = _parse_size_bytes(d.pop("size_bytes", UNSET))

        derived_from = cast(list[int], d.pop("derived_from", UNSET))

        def _parse_content(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content = _parse_content(d.pop("content", UNSET))

        data_asset_create_request = cls(
            name=name,
            category=category,
            region=region,
            size_bytes=size_bytes,
            derived_from=derived_from,
            content=content,
        )

        data_asset_create_request.additional_properties = d
        return data_asset_create_request

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
