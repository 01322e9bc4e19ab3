from enum import StrEnum


class UsageGranularityEnum(StrEnum):
    DAY = "day"
    HOUR = "hour"

    def __str__(self) -> str:
        return str(self.value)
