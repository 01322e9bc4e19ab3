from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.tenant_state_enum import TenantStateEnum

if TYPE_CHECKING:
    from ..models.isolation import Isolation
    from ..models.residency import Residency


T = TypeVar("T", bound="Tenant")


@_attrs_define
class Tenant:
    """
    Attributes:
        id (int):
        slug (str):
        name (str):
        state (TenantStateEnum): * `active` - Active
            * `suspended` - Suspended
            * `closing` - Closing
            * `closed` - Closed
        created_at (datetime.datetime):
        residency (Residency): Refuses, with 422 ``validation_error``, every field of the body it does not declare as
            writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
            with the declared fields' own errors.
        isolation (Isolation): Refuses, with 422 ``validation_error``, every field of the body it does not declare as
            writable, each
            named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
            with the declared fields' own errors.
        gpu_quota (None | str): GPUs the tenant may hold at once; null: no quota.
        endpoint_calls_per_minute (int): Calls a minute each of the tenant's endpoints and public ports takes, counted
            per endpoint (429 throttled past it).
    """

    id: int
    slug: str
    name: str
    state: TenantStateEnum
    created_at: datetime.datetime
    residency: Residency
    isolation: Isolation
    gpu_quota: None | str
    endpoint_calls_per_minute: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        slug = self.slug

        name = self.name

        state = self.state.value

        created_at = self.created_at.isoformat()

        residency = self.residency.to_dict()

        isolation = self.isolation.to_dict()

        gpu_quota: None | str
        gpu_quota = self.gpu_quota

        endpoint_calls_per_minute = self.endpoint_calls_per_minute

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "slug": slug,
                "name": name,
                "state": state,
                "created_at": created_at,
                "residency": residency,
                "isolation": isolation,
                "gpu_quota": gpu_quota,
                "endpoint_calls_per_minute": endpoint_calls_per_minute,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.isolation import Isolation
        from ..models.residency import Residency

        d = dict(src_dict)
        id = d.pop("id")

        slug = d.pop("slug")

        name = d.pop("name")

        state = TenantStateEnum(d.pop("state"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        residency = Residency.from_dict(d.pop("residency"))

        isolation = Isolation.from_dict(d.pop("isolation"))

        def _parse_gpu_quota(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        gpu_quota = _parse_gpu_quota(d.pop("gpu_quota"))

        endpoint_calls_per_minute = d.pop("endpoint_calls_per_minute")

        tenant = cls(
            id=id,
            slug=slug,
            name=name,
            state=state,
            created_at=created_at,
            residency=residency,
            isolation=isolation,
            gpu_quota=gpu_quota,
            endpoint_calls_per_minute=endpoint_calls_per_minute,
        )

        tenant.additional_properties = d
        return tenant

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
