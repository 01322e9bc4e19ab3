from enum import StrEnum


class ExposeEnum(StrEnum):
    NONE = "none"
    PUBLIC = "public"
    TENANT = "tenant"

    def __str__(self) -> str:
        return str(self.value)
