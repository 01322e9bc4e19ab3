from enum import StrEnum


class DataAssetStateEnum(StrEnum):
    LIVE = "live"
    SHREDDED = "shredded"
    SHREDDING = "shredding"

    def __str__(self) -> str:
        return str(self.value)
