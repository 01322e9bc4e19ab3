from enum import StrEnum


class VolumeStateEnum(StrEnum):
    ATTACHED = "attached"
    AVAILABLE = "available"
    CREATING = "creating"
    DELETED = "deleted"
    DELETING = "deleting"

    def __str__(self) -> str:
        return str(self.value)
