from enum import StrEnum


class ShredReasonEnum(StrEnum):
    CLOSURE = "closure"
    DELETE = "delete"
    ERASURE = "erasure"
    RETENTION = "retention"

    def __str__(self) -> str:
        return str(self.value)
