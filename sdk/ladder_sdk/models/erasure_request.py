from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.erasure_state_enum import ErasureStateEnum

if TYPE_CHECKING:
    from ..models.affected import Affected
    from ..models.erasure_scope import ErasureScope
    from ..models.withheld import Withheld


T = TypeVar("T", bound="ErasureRequest")


@_attrs_define
class ErasureRequest:
    """
    Attributes:
        id (int):
        tenant (str):
        state (ErasureStateEnum): * `suspended` - Suspended
            * `completed` - Completed
        on_behalf_of (str): The data subject, when compliance asks.
        scope (ErasureScope):
        requested_by (str):
        created_at (datetime.datetime):
        completed_at (datetime.datetime | None):
        deleted (list[int]): Assets scheduled for crypto-shredding.
        withheld (list[Withheld]): Assets preserved under a legal hold, for now.
        affected (list[Affected]): Derived from erased data: retrain needed.
    """

    id: int
    tenant: str
    state: ErasureStateEnum
    on_behalf_of: str
    scope: ErasureScope
    requested_by: str
    created_at: datetime.datetime
    completed_at: datetime.datetime | None
    deleted: list[int]
    withheld: list[Withheld]
    affected: list[Affected]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        tenant = self.tenant

        state = self.state.value

        on_behalf_of = self.on_behalf_of

        scope = self.scope.to_dict()

        requested_by = self.requested_by

        created_at = self.created_at.isoformat()

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        deleted = self.deleted

        withheld = []
        for withheld_item_data in self.withheld:
            withheld_item = withheld_item_data.to_dict()
            withheld.append(withheld_item)

        affected = []
        for affected_item_data in self.affected:
            affected_item = affected_item_data.to_dict()
            affected.append(affected_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "tenant": tenant,
                "state": state,
                "on_behalf_of": on_behalf_of,
                "scope": scope,
                "requested_by": requested_by,
                "created_at": created_at,
                "completed_at": completed_at,
                "deleted": deleted,
                "withheld": withheld,
                "affected": affected,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.affected import Affected
        from ..models.erasure_scope import ErasureScope
        from ..models.withheld import Withheld

        d = dict(src_dict)
        id = d.pop("id")

        tenant = d.pop("tenant")

        state = ErasureStateEnum(d.pop("state"))

        on_behalf_of = d.pop("on_behalf_of")

        scope = ErasureScope.from_dict(d.pop("scope"))

        requested_by = d.pop("requested_by")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))

        deleted = cast(list[int], d.pop("deleted"))

        withheld = []
        _withheld = d.pop("withheld")
        for withheld_item_data in _withheld:
            withheld_item = Withheld.from_dict(withheld_item_data)

            withheld.append(withheld_item)

        affected = []
        _affected = d.pop("affected")
        for affected_item_data in _affected:
            affected_item = Affected.from_dict(affected_item_data)

            affected.append(affected_item)

        erasure_request = cls(
            id=id,
            tenant=tenant,
            state=state,
            on_behalf_of=on_behalf_of,
            scope=scope,
            requested_by=requested_by,
            created_at=created_at,
            completed_at=completed_at,
            deleted=deleted,
            withheld=withheld,
            affected=affected,
        )

        erasure_request.additional_properties = d
        return erasure_request

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
