from enum import StrEnum


class OnPreemptionEnum(StrEnum):
    REQUEUE = "requeue"
    STOP = "stop"

    def __str__(self) -> str:
        return str(self.value)
