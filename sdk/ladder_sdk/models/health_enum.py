from enum import StrEnum


class HealthEnum(StrEnum):
    HEALTHY = "healthy"
    UNAUTHORIZED = "unauthorized"
    UNKNOWN = "unknown"
    UNREACHABLE = "unreachable"

    def __str__(self) -> str:
        return str(self.value)
