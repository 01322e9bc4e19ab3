from enum import StrEnum


class FleetNodeCpuTeeEnum(StrEnum):
    SNP = "snp"
    TDX = "tdx"

    def __str__(self) -> str:
        return str(self.value)
