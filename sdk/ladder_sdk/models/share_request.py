from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.share_mode_enum import ShareModeEnum

T = TypeVar("T", bound="ShareRequest")


@_attrs_define
class ShareRequest:
    """Refuses, with 422 ``validation_error``, every field of the body it does not declare as writable, each
    named in ``errors`` (``{"gpu_modle": ["Unknown field."]}``; inside a nested body ``share.mdoe``), together
    with the declared fields' own errors.

        Attributes:
            mode (ShareModeEnum): * `fractional` - fractional
                * `mps` - mps
                * `time_slicing` - time_slicing
            fraction (str): Share of one GPU, 0.001 to 0.999 (soft sharing stays inside the tenant).
    """

    mode: ShareModeEnum
    fraction: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        mode = self.mode.value

        fraction = self.fraction

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mode": mode,
                "fraction": fraction,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        mode = ShareModeEnum(d.pop("mode"))

        fraction = d.pop("fraction")

        share_request = cls(
            mode=mode,
            fraction=fraction,
        )

        share_request.additional_properties = d
        return share_request

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
