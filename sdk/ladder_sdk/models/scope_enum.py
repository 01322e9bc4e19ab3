from enum import StrEnum


class ScopeEnum(StrEnum):
    DEVICE = "device"
    GPU = "gpu"

    def __str__(self) -> str:
        return str(self.value)
