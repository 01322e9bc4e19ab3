from enum import StrEnum


class ModelSourceEnum(StrEnum):
    HUB = "hub"
    NONE = "none"
    VOLUME = "volume"

    def __str__(self) -> str:
        return str(self.value)
