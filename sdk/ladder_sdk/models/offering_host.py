from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.offering_host_prices import OfferingHostPrices


T = TypeVar("T", bound="OfferingHost")


@_attrs_define
class OfferingHost:
    """What each GPU is sold with of its node's host, and the price of more (docs/billing.md, "CPU and memory").

    Attributes:
        cpu_per_gpu (int): vCPUs sold with each whole GPU.
        memory_gib_per_gpu (int): GiB of memory sold with each whole GPU.
        cpu_per_slice (int): vCPUs sold with a MIG slice or a soft share.
        memory_gib_per_slice (int): GiB sold with a MIG slice or a soft share.
        most_times (int): A request may ask up to this many times the bundle.
        prices (OfferingHostPrices): Per hour beyond the bundle: "vcpu" per vCPU, "memory" per GiB (empty: only the
            bundle is sold).
    """

    cpu_per_gpu: int
    memory_gib_per_gpu: int
    cpu_per_slice: int
    memory_gib_per_slice: int
    most_times: int
    prices: OfferingHostPrices
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cpu_per_gpu = self.cpu_per_gpu

        memory_gib_per_gpu = self.memory_gib_per_gpu

        cpu_per_slice = self.cpu_per_slice

        memory_gib_per_slice = self.memory_gib_per_slice

        most_times = self.most_times

        prices = self.prices.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cpu_per_gpu": cpu_per_gpu,
                "memory_gib_per_gpu": memory_gib_per_gpu,
                "cpu_per_slice": cpu_per_slice,
                "memory_gib_per_slice": memory_gib_per_slice,
                "most_times": most_times,
                "prices": prices,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.offering_host_prices import OfferingHostPrices

        d = dict(src_dict)
        cpu_per_gpu = d.pop("cpu_per_gpu")

        memory_gib_per_gpu = d.pop("memory_gib_per_gpu")

        cpu_per_slice = d.pop("cpu_per_slice")

        memory_gib_per_slice = d.pop("memory_gib_per_slice")

        most_times = d.pop("most_times")

        prices = OfferingHostPrices.from_dict(d.pop("prices"))

        offering_host = cls(
            cpu_per_gpu=cpu_per_gpu,
            memory_gib_per_gpu=memory_gib_per_gpu,
            cpu_per_slice=cpu_per_slice,
            memory_gib_per_slice=memory_gib_per_slice,
            most_times=most_times,
            prices=prices,
        )

        offering_host.additional_properties = d
        return offering_host

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
