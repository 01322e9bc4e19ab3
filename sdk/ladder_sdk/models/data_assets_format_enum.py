from enum import StrEnum


class DataAssetsFormatEnum(StrEnum):
    BIN = "bin"
    JSON = "json"

    def __str__(self) -> str:
        return str(self.value)
