from enum import StrEnum


class SnapshotStateEnum(StrEnum):
    CREATING = "creating"
    DELETED = "deleted"
    DELETING = "deleting"
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
