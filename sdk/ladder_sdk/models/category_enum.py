from enum import StrEnum


class CategoryEnum(StrEnum):
    CHECKPOINT = "checkpoint"
    DATASET = "dataset"
    EXPORT = "export"
    INFERENCE_PAYLOAD = "inference_payload"
    INVOICE = "invoice"
    JOB_LOG = "job_log"
    USAGE_RECORD = "usage_record"
    VOLUME = "volume"

    def __str__(self) -> str:
        return str(self.value)
