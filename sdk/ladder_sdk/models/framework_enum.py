from enum import StrEnum


class FrameworkEnum(StrEnum):
    MPI = "mpi"
    RAY = "ray"
    SLURM = "slurm"
    TORCHRUN = "torchrun"

    def __str__(self) -> str:
        return str(self.value)
