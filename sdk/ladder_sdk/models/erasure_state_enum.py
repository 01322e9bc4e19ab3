from enum import StrEnum


class ErasureStateEnum(StrEnum):
    COMPLETED = "completed"
    SUSPENDED = "suspended"

    def __str__(self) -> str:
        return str(self.value)
