from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.percentiles import Percentiles


T = TypeVar("T", bound="ColdStartPhases")


@_attrs_define
class ColdStartPhases:
    """
    Attributes:
        device_wait (Percentiles):
        image_pull (Percentiles):
        model_load (Percentiles):
    """

    device_wait: Percentiles
    image_pull: Percentiles
    model_load: Percentiles
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device_wait = self.device_wait.to_dict()

        image_pull = self.image_pull.to_dict()

        model_load = self.model_load.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device_wait": device_wait,
                "image_pull": image_pull,
                "model_load": model_load,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.percentiles import Percentiles

        d = dict(src_dict)
        device_wait = Percentiles.from_dict(d.pop("device_wait"))

        image_pull = Percentiles.from_dict(d.pop("image_pull"))

        model_load = Percentiles.from_dict(d.pop("model_load"))

        cold_start_phases = cls(
            device_wait=device_wait,
            image_pull=image_pull,
            model_load=model_load,
        )

        cold_start_phases.additional_properties = d
        return cold_start_phases

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
