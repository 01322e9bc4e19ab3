from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.access_urls import AccessUrls
    from ..models.ssh_access import SshAccess


T = TypeVar("T", bound="Access")


@_attrs_define
class Access:
    """
    Attributes:
        ssh (None | SshAccess): Through the hall's SSH gateway, with your keys.
        endpoint (None | str): A serverless endpoint; call it with your API key.
        urls (AccessUrls): Port -> HTTPS URL of each public port.
        console (None | str): A VM's serial console, followed as NDJSON.
    """

    ssh: None | SshAccess
    endpoint: None | str
    urls: AccessUrls
    console: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.ssh_access import SshAccess

        ssh: dict[str, Any] | None
        if isinstance(self.ssh, SshAccess):
            ssh = self.ssh.to_dict()
        else:
            ssh = self.ssh

        endpoint: None | str
        endpoint = self.endpoint

        urls = self.urls.to_dict()

        console: None | str
        console = self.console

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ssh": ssh,
                "endpoint": endpoint,
                "urls": urls,
                "console": console,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.access_urls import AccessUrls
        from ..models.ssh_access import SshAccess

        d = dict(src_dict)

        def _parse_ssh(data: object) -> None | SshAccess:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                ssh_type_1 = SshAccess.from_dict(data)

                return ssh_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SshAccess, data)

        ssh = _parse_ssh(d.pop("ssh"))

        def _parse_endpoint(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        endpoint = _parse_endpoint(d.pop("endpoint"))

        urls = AccessUrls.from_dict(d.pop("urls"))

        def _parse_console(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        console = _parse_console(d.pop("console"))

        access = cls(
            ssh=ssh,
            endpoint=endpoint,
            urls=urls,
            console=console,
        )

        access.additional_properties = d
        return access

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
