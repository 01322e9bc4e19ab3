from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.isolation_request import IsolationRequest
    from ..models.residency_request import ResidencyRequest


T = TypeVar("T", bound="PatchedTenantUpdateRequest")


@_attrs_define
class PatchedTenantUpdateRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str | Unset):
            residency (ResidencyRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does
                not declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
            isolation (IsolationRequest | Unset): Refuses, with 422 ``validation_error``, every field of the body it does
                not declare as writable, each
                named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
                with the declared fields' own errors.
    """

    name: str | Unset = UNSET
    residency: ResidencyRequest | Unset = UNSET
    isolation: IsolationRequest | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        residency: dict[str, Any] | Unset = UNSET
        if not isinstance(self.residency, Unset):
            residency = self.residency.to_dict()

        isolation: dict[str, Any] | Unset = UNSET
        if not isinstance(self.isolation, Unset):
            isolation = self.isolation.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if name is not UNSET:
            field_dict["name"] = name
        if residency is not UNSET:
            field_dict["residency"] = residency
        if isolation is not UNSET:
            field_dict["isolation"] = isolation

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.isolation_request import IsolationRequest
        from ..models.residency_request import ResidencyRequest

        d = dict(src_dict)
        name = d.pop("name", UNSET)

        _residency = d.pop("residency", UNSET)
        residency: ResidencyRequest | Unset
        if isinstance(_residency, Unset):
            residency = UNSET
        else:
            residency = ResidencyRequest.from_dict(_residency)

        _isolation = d.pop("isolation", UNSET)
        isolation: IsolationRequest | Unset
        if isinstance(_isolation, Unset):
            isolation = UNSET
        else:
            isolation = IsolationRequest.from_dict(_isolation)

        patched_tenant_update_request = cls(
            name=name,
            residency=residency,
            isolation=isolation,
        )

        patched_tenant_update_request.additional_properties = d
        return patched_tenant_update_request

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
