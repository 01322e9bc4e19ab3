from enum import StrEnum


class ShareModeEnum(StrEnum):
    FRACTIONAL = "fractional"
    MPS = "mps"
    TIME_SLICING = "time_slicing"

    def __str__(self) -> str:
        return str(self.value)
