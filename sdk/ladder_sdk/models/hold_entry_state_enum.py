from enum import StrEnum


class HoldEntryStateEnum(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"

    def __str__(self) -> str:
        return str(self.value)
