from enum import StrEnum


class GpuModeEnum(StrEnum):
    MIG = "mig"
    SHARED = "shared"
    WHOLE = "whole"

    def __str__(self) -> str:
        return str(self.value)
