from enum import StrEnum


class CapacityClassEnum(StrEnum):
    ON_DEMAND = "on_demand"
    RESERVED = "reserved"
    SPOT = "spot"

    def __str__(self) -> str:
        return str(self.value)
