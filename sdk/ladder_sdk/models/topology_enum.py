from enum import StrEnum


class TopologyEnum(StrEnum):
    NVLINK = "nvlink"

    def __str__(self) -> str:
        return str(self.value)
