from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.health_enum import HealthEnum

T = TypeVar("T", bound="Cluster")


@_attrs_define
class Cluster:
    """
    Attributes:
        name (str):
        hall (str):
        api_server (str):
        health (HealthEnum): * `unknown` - Unknown
            * `healthy` - Healthy
            * `unreachable` - Unreachable
            * `unauthorized` - Unauthorized
        health_detail (str):
        server_version (str):
        checked_at (datetime.datetime | None):
        reconciled_at (datetime.datetime | None):
        created_at (datetime.datetime):
    """

    name: str
    hall: str
    api_server: str
    health: HealthEnum
    health_detail: str
    server_version: str
    checked_at: datetime.datetime | None
    reconciled_at: datetime.datetime | None
    created_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        hall = self.hall

        api_server = self.api_server

        health = self.health.value

        health_detail = self.health_detail

        server_version = self.server_version

        checked_at: None | str
        if isinstance(self.checked_at, datetime.datetime):
            checked_at = self.checked_at.isoformat()
        else:
            checked_at = self.checked_at

        reconciled_at: None | str
        if isinstance(self.reconciled_at, datetime.datetime):
            reconciled_at = self.reconciled_at.isoformat()
        else:
            reconciled_at = self.reconciled_at

        created_at = self.created_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "hall": hall,
                "api_server": api_server,
                "health": health,
                "health_detail": health_detail,
                "server_version": server_version,
                "checked_at": checked_at,
                "reconciled_at": reconciled_at,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        hall = d.pop("hall")

        api_server = d.pop("api_server")

        health = HealthEnum(d.pop("health"))

        health_detail = d.pop("health_detail")

        server_version = d.pop("server_version")

        def _parse_checked_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                checked_at_type_0 = datetime.datetime.fromisoformat(data)

                return checked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        checked_at = _parse_checked_at(d.pop("checked_at"))

        def _parse_reconciled_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reconciled_at_type_0 = datetime.datetime.fromisoformat(data)

                return reconciled_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        reconciled_at = _parse_reconciled_at(d.pop("reconciled_at"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        cluster = cls(
            name=name,
            hall=hall,
            api_server=api_server,
            health=health,
            health_detail=health_detail,
            server_version=server_version,
            checked_at=checked_at,
            reconciled_at=reconciled_at,
            created_at=created_at,
        )

        cluster.additional_properties = d
        return cluster

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
