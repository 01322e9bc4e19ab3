from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.actor_type_enum import ActorTypeEnum

if TYPE_CHECKING:
    from ..models.change import Change


T = TypeVar("T", bound="AuditEvent")


@_attrs_define
class AuditEvent:
    """
    Attributes:
        seq (int):
        at (datetime.datetime):
        actor_type (ActorTypeEnum): * `user` - User
            * `api_key` - Api Key
            * `system` - System
        actor_id (str):
        actor_label (str):
        api_key_prefix (str):
        tenant (str):
        action (str):
        target_type (str):
        target_id (str):
        data (Any):
        changes (list[Change]): What changed, from `data`: `{field, old, new}` per updated field or state transition.
        prev_hash (str):
        hash_ (str):
    """

    seq: int
    at: datetime.datetime
    actor_type: ActorTypeEnum
    actor_id: str
    actor_label: str
    api_key_prefix: str
    tenant: str
    action: str
    target_type: str
    target_id: str
    data: Any
    changes: list[Change]
    prev_hash: str
    hash_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        at = self.at.isoformat()

        actor_type = self.actor_type.value

        actor_id = self.actor_id

        actor_label = self.actor_label

        api_key_prefix = self.api_key_prefix

        tenant = self.tenant

        action = self.action

        target_type = self.target_type

        target_id = self.target_id

        data = self.data

        changes = []
        for changes_item_data in self.changes:
            changes_item = changes_item_data.to_dict()
            changes.append(changes_item)

        prev_hash = self.prev_hash

        hash_ = self.hash_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "seq": seq,
                "at": at,
                "actor_type": actor_type,
                "actor_id": actor_id,
                "actor_label": actor_label,
                "api_key_prefix": api_key_prefix,
                "tenant": tenant,
                "action": action,
                "target_type": target_type,
                "target_id": target_id,
                "data": data,
                "changes": changes,
                "prev_hash": prev_hash,
                "hash": hash_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.change import Change

        d = dict(src_dict)
        seq = d.pop("seq")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        actor_type = ActorTypeEnum(d.pop("actor_type"))

        actor_id = d.pop("actor_id")

        actor_label = d.pop("actor_label")

        api_key_prefix = d.pop("api_key_prefix")

        tenant = d.pop("tenant")

        action = d.pop("action")

        target_type = d.pop("target_type")

        target_id = d.pop("target_id")

        data = d.pop("data")

        changes = []
        _changes = d.pop("changes")
        for changes_item_data in _changes:
            changes_item = Change.from_dict(changes_item_data)

            changes.append(changes_item)

        prev_hash = d.pop("prev_hash")

        hash_ = d.pop("hash")

        audit_event = cls(
            seq=seq,
            at=at,
            actor_type=actor_type,
            actor_id=actor_id,
            actor_label=actor_label,
            api_key_prefix=api_key_prefix,
            tenant=tenant,
            action=action,
            target_type=target_type,
            target_id=target_id,
            data=data,
            changes=changes,
            prev_hash=prev_hash,
            hash_=hash_,
        )

        audit_event.additional_properties = d
        return audit_event

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
