from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.fragmentation_largest_gang_gpus import FragmentationLargestGangGpus


T = TypeVar("T", bound="Fragmentation")


@_attrs_define
class Fragmentation:
    """
    Attributes:
        gpu_model (str):
        hall (str):
        gpus (int):
        free_gpus (int):
        unallocated_gpus (float):
        stranded_mig_slices (int):
        largest_gang_gpus (FragmentationLargestGangGpus):
    """

    gpu_model: str
    hall: str
    gpus: int
    free_gpus: int
    unallocated_gpus: float
    stranded_mig_slices: int
    largest_gang_gpus: FragmentationLargestGangGpus
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gpu_model = self.gpu_model

        hall = self.hall

        gpus = self.gpus

        free_gpus = self.free_gpus

        unallocated_gpus = self.unallocated_gpus

        stranded_mig_slices = self.stranded_mig_slices

        largest_gang_gpus = self.largest_gang_gpus.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gpu_model": gpu_model,
                "hall": hall,
                "gpus": gpus,
                "free_gpus": free_gpus,
                "unallocated_gpus": unallocated_gpus,
                "stranded_mig_slices": stranded_mig_slices,
                "largest_gang_gpus": largest_gang_gpus,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.fragmentation_largest_gang_gpus import FragmentationLargestGangGpus

        d = dict(src_dict)
        gpu_model = d.pop("gpu_model")

        hall = d.pop("hall")

        gpus = d.pop("gpus")

        free_gpus = d.pop("free_gpus")

        unallocated_gpus = d.pop("unallocated_gpus")

        stranded_mig_slices = d.pop("stranded_mig_slices")

        largest_gang_gpus = FragmentationLargestGangGpus.from_dict(d.pop("largest_gang_gpus"))

        fragmentation = cls(
            gpu_model=gpu_model,
            hall=hall,
            gpus=gpus,
            free_gpus=free_gpus,
            unallocated_gpus=unallocated_gpus,
            stranded_mig_slices=stranded_mig_slices,
            largest_gang_gpus=largest_gang_gpus,
        )

        fragmentation.additional_properties = d
        return fragmentation

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
