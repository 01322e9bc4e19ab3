from enum import StrEnum


class MovedKindEnum(StrEnum):
    JOB = "job"
    SERVERLESS = "serverless"

    def __str__(self) -> str:
        return str(self.value)
