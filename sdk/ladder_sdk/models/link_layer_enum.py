from enum import StrEnum


class LinkLayerEnum(StrEnum):
    INFINIBAND = "infiniband"
    ROCE = "roce"

    def __str__(self) -> str:
        return str(self.value)
