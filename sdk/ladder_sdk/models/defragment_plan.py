from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fragmentation import Fragmentation
    from ..models.move import Move


T = TypeVar("T", bound="DefragmentPlan")


@_attrs_define
class DefragmentPlan:
    """
    Attributes:
        moves (list[Move]):
        before (list[Fragmentation]):
        after (list[Fragmentation]):
    """

    moves: list[Move]
    before: list[Fragmentation]
    after: list[Fragmentation]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        moves = []
        for moves_item_data in self.moves:
            moves_item = moves_item_data.to_dict()
            moves.append(moves_item)

        before = []
        for before_item_data in self.before:
            before_item = before_item_data.to_dict()
            before.append(before_item)

        after = []
        for after_item_data in self.after:
            after_item = after_item_data.to_dict()
            after.append(after_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "moves": moves,
                "before": before,
                "after": after,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fragmentation import Fragmentation
        from ..models.move import Move

        d = dict(src_dict)
        moves = []
        _moves = d.pop("moves")
        for moves_item_data in _moves:
            moves_item = Move.from_dict(moves_item_data)

            moves.append(moves_item)

        before = []
        _before = d.pop("before")
        for before_item_data in _before:
            before_item = Fragmentation.from_dict(before_item_data)

            before.append(before_item)

        after = []
        _after = d.pop("after")
        for after_item_data in _after:
            after_item = Fragmentation.from_dict(after_item_data)

            after.append(after_item)

        defragment_plan = cls(
            moves=moves,
            before=before,
            after=after,
        )

        defragment_plan.additional_properties = d
        return defragment_plan

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
