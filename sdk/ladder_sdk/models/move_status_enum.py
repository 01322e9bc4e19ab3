from enum import StrEnum


class MoveStatusEnum(StrEnum):
    DONE = "done"
    FAILED = "failed"
    MOVING = "moving"
    PENDING = "pending"
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return str(self.value)
