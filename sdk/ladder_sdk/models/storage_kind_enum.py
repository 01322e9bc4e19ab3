from enum import StrEnum


class StorageKindEnum(StrEnum):
    BLOCK = "block"
    FILESYSTEM = "filesystem"
    SNAPSHOT = "snapshot"

    def __str__(self) -> str:
        return str(self.value)
