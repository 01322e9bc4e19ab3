from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Isolation")


@_attrs_define
class Isolation:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            dedicated_hardware (bool | Unset): Never share a GPU with another tenant, not even by MIG.
            allow_soft_sharing (bool | Unset): Let this tenant's own workloads soft-share a GPU (never across tenants).
    """

    dedicated_hardware: bool | Unset = UNSET
    allow_soft_sharing: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        dedicated_hardware = self.dedicated_hardware

        allow_soft_sharing = self.allow_soft_sharing

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if dedicated_hardware is not UNSET:
            field_dict["dedicated_hardware"] = dedicated_hardware
        if allow_soft_sharing is not UNSET:
            field_dict["allow_soft_sharing"] = allow_soft_sharing

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        dedicated_hardware = d.pop("dedicated_hardware", UNSET)

        allow_soft_sharing = d.pop("allow_soft_sharing", UNSET)

        isolation = cls(
            dedicated_hardware=dedicated_hardware,
            allow_soft_sharing=allow_soft_sharing,
        )

        isolation.additional_properties = d
        return isolation

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
