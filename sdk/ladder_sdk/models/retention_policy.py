from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.category_enum import CategoryEnum
from ..models.retention_source_enum import RetentionSourceEnum

T = TypeVar("T", bound="RetentionPolicy")


@_attrs_define
class RetentionPolicy:
    """
    Attributes:
        category (CategoryEnum): * `dataset` - Dataset
            * `checkpoint` - Checkpoint
            * `job_log` - Job Log
            * `inference_payload` - Inference Payload
            * `export` - Export
            * `usage_record` - Usage Record
            * `invoice` - Invoice
            * `volume` - Volume
        days (int | None): Effective retention in days; null: zero retention.
        zero_retention (bool): The product does not persist this category at all.
        source (RetentionSourceEnum): * `default` - default
            * `tenant` - tenant
        legal_minimum_days (int | None): What the law asks; null: no minimum.
    """

    category: CategoryEnum
    days: int | None
    zero_retention: bool
    source: RetentionSourceEnum
    legal_minimum_days: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        category = self.category.value

        days: int | None
        days = self.days

        zero_retention = self.zero_retention

        source = self.source.value

        legal_minimum_days: int | None
        legal_minimum_days = self.legal_minimum_days

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "category": category,
                "days": days,
                "zero_retention": zero_retention,
                "source": source,
                "legal_minimum_days": legal_minimum_days,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        category = CategoryEnum(d.pop("category"))

        def _parse_days(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        days = _parse_days(d.pop("days"))

        zero_retention = d.pop("zero_retention")

        source = RetentionSourceEnum(d.pop("source"))

        def _parse_legal_minimum_days(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        legal_minimum_days = _parse_legal_minimum_days(d.pop("legal_minimum_days"))

        retention_policy = cls(
            category=category,
            days=days,
            zero_retention=zero_retention,
            source=source,
            legal_minimum_days=legal_minimum_days,
        )

        retention_policy.additional_properties = d
        return retention_policy

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
