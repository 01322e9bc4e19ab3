from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClusterRegisterRequest")


@_attrs_define
class ClusterRegisterRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            name (str):
            hall (str):
            api_server (str):
            kubeconfig (str | Unset): A kubeconfig (YAML).
            token (str | Unset): A service account token.
            ca_cert (str | Unset): The API server's CA (PEM).
    """

    name: str
    hall: str
    api_server: str
    kubeconfig: str | Unset = UNSET
    token: str | Unset = UNSET
    ca_cert: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        hall = self.hall

        api_server = self.api_server

        kubeconfig = self.kubeconfig

        token = self.token

        ca_cert = self.ca_cert

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "hall": hall,
                "api_server": api_server,
            }
        )
        if kubeconfig is not UNSET:
            field_dict["kubeconfig"] = kubeconfig
        if token is not UNSET:
            field_dict["token"] = token
        if ca_cert is not UNSET:
            field_dict["ca_cert"] = ca_cert

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        hall = d.pop("hall")

        api_server = d.pop("api_server")

        kubeconfig = d.pop("kubeconfig", UNSET)

        token = d.pop("token", UNSET)

        ca_cert = d.pop("ca_cert", UNSET)

        cluster_register_request = cls(
            name=name,
            hall=hall,
            api_server=api_server,
            kubeconfig=kubeconfig,
            token=token,
            ca_cert=ca_cert,
        )

        cluster_register_request.additional_properties = d
        return cluster_register_request

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
