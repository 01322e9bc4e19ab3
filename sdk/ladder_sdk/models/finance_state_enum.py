from enum import StrEnum


class FinanceStateEnum(StrEnum):
    FAILED = "failed"
    STALE = "stale"

    def __str__(self) -> str:
        return str(self.value)
