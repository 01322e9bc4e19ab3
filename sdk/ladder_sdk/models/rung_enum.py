from enum import StrEnum


class RungEnum(StrEnum):
    BARE_METAL = "bare_metal"
    CONFIDENTIAL_VM = "confidential_vm"
    CONTAINER = "container"
    JOB = "job"
    SERVERLESS = "serverless"
    VM = "vm"

    def __str__(self) -> str:
        return str(self.value)
