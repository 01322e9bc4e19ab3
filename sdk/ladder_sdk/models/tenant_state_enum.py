from enum import StrEnum


class TenantStateEnum(StrEnum):
    ACTIVE = "active"
    CLOSED = "closed"
    CLOSING = "closing"
    SUSPENDED = "suspended"

    def __str__(self) -> str:
        return str(self.value)
