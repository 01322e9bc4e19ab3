from enum import StrEnum


class PushStateEnum(StrEnum):
    FAILED = "failed"
    NOTHING = "nothing"
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    STALE = "stale"

    def __str__(self) -> str:
        return str(self.value)
