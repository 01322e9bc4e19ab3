from enum import StrEnum


class RetentionSourceEnum(StrEnum):
    DEFAULT = "default"
    TENANT = "tenant"

    def __str__(self) -> str:
        return str(self.value)
