from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.secret_exposed_as_enum import SecretExposedAsEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="SecretRefRequest")


@_attrs_define
class SecretRefRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str):
            as_ (SecretExposedAsEnum | Unset): * `env` - env
                * `file` - file Default: SecretExposedAsEnum.ENV.
    """

    name: str
    as_: SecretExposedAsEnum | Unset = SecretExposedAsEnum.ENV
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        as_: str | Unset = UNSET
        if not isinstance(self.as_, Unset):
            as_ = self.as_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if as_ is not UNSET:
            field_dict["as"] = as_

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        _as_ = d.pop("as", UNSET)
        as_: SecretExposedAsEnum | Unset
        if isinstance(_as_, Unset):
            as_ = UNSET
        else:
            as_ = SecretExposedAsEnum(_as_)

        secret_ref_request = cls(
            name=name,
            as_=as_,
        )

        secret_ref_request.additional_properties = d
        return secret_ref_request

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
