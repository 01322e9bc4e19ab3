from enum import StrEnum


class ClosureStepEnum(StrEnum):
    CLOSED = "closed"
    EXPORTING = "exporting"
    INVOICING = "invoicing"
    SCHEDULING = "scheduling"
    STOPPING = "stopping"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)
