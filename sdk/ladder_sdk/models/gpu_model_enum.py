from enum import StrEnum


class GpuModelEnum(StrEnum):
    A100_40GB = "A100-40GB"
    A100_80GB = "A100-80GB"
    B200 = "B200"
    GB200 = "GB200"
    H100_NVL_94GB = "H100-NVL-94GB"
    H100_SXM_80GB = "H100-SXM-80GB"
    H200_141GB = "H200-141GB"

    def __str__(self) -> str:
        return str(self.value)
