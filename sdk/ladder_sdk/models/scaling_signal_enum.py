from enum import StrEnum


class ScalingSignalEnum(StrEnum):
    KV_CACHE = "kv_cache"
    QUEUE_DEPTH = "queue_depth"

    def __str__(self) -> str:
        return str(self.value)
