from enum import StrEnum


class ResolutionEnum(StrEnum):
    RAW = "raw"
    VALUE_1 = "5m"

    def __str__(self) -> str:
        return str(self.value)
