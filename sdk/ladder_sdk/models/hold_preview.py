from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.hold_preview_by_category import HoldPreviewByCategory


T = TypeVar("T", bound="HoldPreview")


@_attrs_define
class HoldPreview:
    """
    Attributes:
        assets (int):
        bytes_ (int):
        by_category (HoldPreviewByCategory): Per category, those covered.
        tenant (str): Tenant slug.
    """

    assets: int
    bytes_: int
    by_category: HoldPreviewByCategory
    tenant: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        assets = self.assets

        bytes_ = self.bytes_

        by_category = self.by_category.to_dict()

        tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "assets": assets,
                "bytes": bytes_,
                "by_category": by_category,
                "tenant": tenant,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.hold_preview_by_category import HoldPreviewByCategory

        d = dict(src_dict)
        assets = d.pop("assets")

        bytes_ = d.pop("bytes")

        by_category = HoldPreviewByCategory.from_dict(d.pop("by_category"))

        tenant = d.pop("tenant")

        hold_preview = cls(
            assets=assets,
            bytes_=bytes_,
            by_category=by_category,
            tenant=tenant,
        )

        hold_preview.additional_properties = d
        return hold_preview

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
