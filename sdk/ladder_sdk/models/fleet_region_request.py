from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fleet_hall_request import FleetHallRequest


T = TypeVar("T", bound="FleetRegionRequest")


@_attrs_define
class FleetRegionRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            code (str):
            name (str):
            jurisdiction (str): 2 to 8 upper-case letters, e.g. EU, US.
            halls (list[FleetHallRequest]):
    """

    code: str
    name: str
    jurisdiction: str
    halls: list[FleetHallRequest]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        name = self.name

        jurisdiction = self.jurisdiction

        halls = []
        for halls_item_data in self.halls:
            halls_item = halls_item_data.to_dict()
            halls.append(halls_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "name": name,
                "jurisdiction": jurisdiction,
                "halls": halls,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fleet_hall_request import FleetHallRequest

        d = dict(src_dict)
        code = d.pop("code")

        name = d.pop("name")

        jurisdiction = d.pop("jurisdiction")

        halls = []
        _halls = d.pop("halls")
        for halls_item_data in _halls:
            halls_item = FleetHallRequest.from_dict(halls_item_data)

            halls.append(halls_item)

        fleet_region_request = cls(
            code=code,
            name=name,
            jurisdiction=jurisdiction,
            halls=halls,
        )

        fleet_region_request.additional_properties = d
        return fleet_region_request

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
