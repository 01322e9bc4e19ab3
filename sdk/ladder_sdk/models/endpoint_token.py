from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="EndpointToken")


@_attrs_define
class EndpointToken:
    """
    Attributes:
        token (str): Send it as Authorization: Bearer <token> to the endpoints' URLs.
        token_type (str):
        expires_at (datetime.datetime):
        audiences (list[str]):
        endpoints (list[int] | None):
        kid (str): The signing key, as your tenant's JWKS lists it.
    """

    token: str
    token_type: str
    expires_at: datetime.datetime
    audiences: list[str]
    endpoints: list[int] | None
    kid: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        token = self.token

        token_type = self.token_type

        expires_at = self.expires_at.isoformat()

        audiences = self.audiences

        endpoints: list[int] | None
        if isinstance(self.endpoints, list):
            endpoints = self.endpoints

        else:
            endpoints = self.endpoints

        kid = self.kid

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "token": token,
                "token_type": token_type,
                "expires_at": expires_at,
                "audiences": audiences,
                "endpoints": endpoints,
                "kid": kid,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        token = d.pop("token")

        token_type = d.pop("token_type")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        audiences = cast(list[str], d.pop("audiences"))

        def _parse_endpoints(data: object) -> list[int] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                endpoints_type_0 = cast(list[int], data)

                return endpoints_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | None, data)

        endpoints = _parse_endpoints(d.pop("endpoints"))

        kid = d.pop("kid")

        endpoint_token = cls(
            token=token,
            token_type=token_type,
            expires_at=expires_at,
            audiences=audiences,
            endpoints=endpoints,
            kid=kid,
        )

        endpoint_token.additional_properties = d
        return endpoint_token

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
