from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="EndpointTokenRotation")


@_attrs_define
class EndpointTokenRotation:
    """
    Attributes:
        generation (int): The signing key's generation from now on.
        refused_within_seconds (int): Every token signed before is refused at the gateway within this many seconds.
    """

    generation: int
    refused_within_seconds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        generation = self.generation

        refused_within_seconds = self.refused_within_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "generation": generation,
                "refused_within_seconds": refused_within_seconds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        generation = d.pop("generation")

        refused_within_seconds = d.pop("refused_within_seconds")

        endpoint_token_rotation = cls(
            generation=generation,
            refused_within_seconds=refused_within_seconds,
        )

        endpoint_token_rotation.additional_properties = d
        return endpoint_token_rotation

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
