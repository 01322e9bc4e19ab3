from enum import StrEnum


class VolumeKindEnum(StrEnum):
    BLOCK = "block"
    FILESYSTEM = "filesystem"

    def __str__(self) -> str:
        return str(self.value)
