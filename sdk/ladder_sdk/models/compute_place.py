from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ComputePlace")


@_attrs_define
class ComputePlace:
    """
    Attributes:
        hall (str):
        region (str):
        jurisdiction (str):
        fenced_for (None | str):
        allocations (int):
        first (datetime.datetime): The first allocation placed here.
        last (datetime.datetime | None): The last state change of one placed here.
        violation (None | str): Why the residency now forbids this place.
        allocation_ids (list[int] | Unset): With a violation: the first ids.
    """

    hall: str
    region: str
    jurisdiction: str
    fenced_for: None | str
    allocations: int
    first: datetime.datetime
    last: datetime.datetime | None
    violation: None | str
    allocation_ids: list[int] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        hall = self.hall

        region = self.region

        jurisdiction = self.jurisdiction

        fenced_for: None | str
        fenced_for = self.fenced_for

        allocations = self.allocations

        first = self.first.isoformat()

        last: None | str
        if isinstance(self.last, datetime.datetime):
            last = self.last.isoformat()
        else:
            last = self.last

        violation: None | str
        violation = self.violation

        allocation_ids: list[int] | Unset = UNSET
        if not isinstance(self.allocation_ids, Unset):
            allocation_ids = self.allocation_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "hall": hall,
                "region": region,
                "jurisdiction": jurisdiction,
                "fenced_for": fenced_for,
                "allocations": allocations,
                "first": first,
                "last": last,
                "violation": violation,
            }
        )
        if allocation_ids is not UNSET:
            field_dict["allocation_ids"] = allocation_ids

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        hall = d.pop("hall")

        region = d.pop("region")

        jurisdiction = d.pop("jurisdiction")

        def _parse_fenced_for(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        fenced_for = _parse_fenced_for(d.pop("fenced_for"))

        allocations = d.pop("allocations")

        first = datetime.datetime.fromisoformat(d.pop("first"))

        def _parse_last(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_type_0 = datetime.datetime.fromisoformat(data)

                return last_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last = _parse_last(d.pop("last"))

        def _parse_violation(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        violation = _parse_violation(d.pop("violation"))

        allocation_ids = cast(list[int], d.pop("allocation_ids", UNSET))

        compute_place = cls(
            hall=hall,
            region=region,
            jurisdiction=jurisdiction,
            fenced_for=fenced_for,
            allocations=allocations,
            first=first,
            last=last,
            violation=violation,
            allocation_ids=allocation_ids,
        )

        compute_place.additional_properties = d
        return compute_place

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
