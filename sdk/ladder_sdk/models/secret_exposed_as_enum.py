from enum import StrEnum


class SecretExposedAsEnum(StrEnum):
    ENV = "env"
    FILE = "file"

    def __str__(self) -> str:
        return str(self.value)
