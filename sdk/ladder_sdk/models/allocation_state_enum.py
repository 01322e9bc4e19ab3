from enum import StrEnum


class AllocationStateEnum(StrEnum):
    FAILED = "failed"
    IDLE = "idle"
    PLACED = "placed"
    PROVISIONING = "provisioning"
    QUEUED = "queued"
    REQUESTED = "requested"
    RESTARTING = "restarting"
    RUNNING = "running"
    STOPPED = "stopped"
    STOPPING = "stopping"

    def __str__(self) -> str:
        return str(self.value)
