from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="VolumePlace")


@_attrs_define
class VolumePlace:
    """
    Attributes:
        id (int):
        name (str):
        region (str):
        jurisdiction (str):
        kind (str): `filesystem` or `block`.
        size_gb (int): Provisioned size.
        used_gb (int | None): In use, as the backend last reported.
        state (str):
        snapshots (int): Snapshots not deleted (they live in the volume's region).
        violation (None | str): Why the residency now forbids its region.
    """

    id: int
    name: str
    region: str
    jurisdiction: str
    kind: str
    size_gb: int
    used_gb: int | None
    state: str
    snapshots: int
    violation: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        name = self.name

        region = self.region

        jurisdiction = self.jurisdiction

        kind = self.kind

        size_gb = self.size_gb

        used_gb: int | None
        used_gb = self.used_gb

        state = self.state

        snapshots = self.snapshots

        violation: None | str
        violation = self.violation

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "name": name,
                "region": region,
                "jurisdiction": jurisdiction,
                "kind": kind,
                "size_gb": size_gb,
                "used_gb": used_gb,
                "state": state,
                "snapshots": snapshots,
                "violation": violation,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        region = d.pop("region")

        jurisdiction = d.pop("jurisdiction")

        kind = d.pop("kind")

        size_gb = d.pop("size_gb")

        def _parse_used_gb(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        used_gb = _parse_used_gb(d.pop("used_gb"))

        state = d.pop("state")

        snapshots = d.pop("snapshots")

        def _parse_violation(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        violation = _parse_violation(d.pop("violation"))

        volume_place = cls(
            id=id,
            name=name,
            region=region,
            jurisdiction=jurisdiction,
            kind=kind,
            size_gb=size_gb,
            used_gb=used_gb,
            state=state,
            snapshots=snapshots,
            violation=violation,
        )

        volume_place.additional_properties = d
        return volume_place

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
