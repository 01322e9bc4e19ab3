from enum import StrEnum


class NodeStateEnum(StrEnum):
    DRAINING = "draining"
    FAILED = "failed"
    MAINTENANCE = "maintenance"
    QUARANTINED = "quarantined"
    READY = "ready"
    REGISTERING = "registering"
    SANITIZING = "sanitizing"

    def __str__(self) -> str:
        return str(self.value)
