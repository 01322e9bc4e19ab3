from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.expose_enum import ExposeEnum
from ..models.protocol_enum import ProtocolEnum
from ..types import UNSET, Unset

T = TypeVar("T", bound="PortRequest")


@_attrs_define
class PortRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            port (int):
            protocol (ProtocolEnum | Unset): * `http` - http
                * `tcp` - tcp
                * `udp` - udp Default: ProtocolEnum.HTTP.
            expose (ExposeEnum | Unset): * `none` - none
                * `tenant` - tenant
                * `public` - public Default: ExposeEnum.NONE.
    """

    port: int
    protocol: ProtocolEnum | Unset = ProtocolEnum.HTTP
    expose: ExposeEnum | Unset = ExposeEnum.NONE
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        port = self.port

        protocol: str | Unset = UNSET
        if not isinstance(self.protocol, Unset):
            protocol = self.protocol.value

        expose: str | Unset = UNSET
        if not isinstance(self.expose, Unset):
            expose = self.expose.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "port": port,
            }
        )
        if protocol is not UNSET:
            field_dict["protocol"] = protocol
        if expose is not UNSET:
            field_dict["expose"] = expose

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        port = d.pop("port")

        _protocol = d.pop("protocol", UNSET)
        protocol: ProtocolEnum | Unset
        if isinstance(_protocol, Unset):
            protocol = UNSET
        else:
            protocol = ProtocolEnum(_protocol)

        _expose = d.pop("expose", UNSET)
        expose: ExposeEnum | Unset
        if isinstance(_expose, Unset):
            expose = UNSET
        else:
            expose = ExposeEnum(_expose)

        port_request = cls(
            port=port,
            protocol=protocol,
            expose=expose,
        )

        port_request.additional_properties = d
        return port_request

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
