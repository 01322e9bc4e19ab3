"""The GPU model catalog: memory, confidential-computing support and MIG profile names per model.

Profile names follow ``docs/reference/mig-profiles.md``; the geometry behind each name is in ``mig.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from provisioning.domain.placement.mig import MigKind


@dataclass(frozen=True)
class GpuModelSpec:
    name: str
    memory_gb: int
    cc_capable: bool
    # profile name -> kind, e.g. {"1g.10gb": G1, "1g.10gb+me": G1_ME, ...}
    mig_profiles: dict[str, MigKind] = field(default_factory=dict)
    # NVLink across hosts (an NVL72 rack): a gang's memory sharing between nodes needs an IMEX ComputeDomain.
    multi_node_nvlink: bool = False

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def profile_kind(self, name: str) -> MigKind | None:
        return self.mig_profiles.get(name)

    def profile_name(self, kind: MigKind) -> str:
        return next(name for name, k in self.mig_profiles.items() if k is kind)


def _profiles(g1: str, g1_double: str, g2: str, g3: str, g4: str, g7: str) -> dict[str, MigKind]:
    return {
        g1: MigKind.G1,
        f"{g1}+me": MigKind.G1_ME,
        g1_double: MigKind.G1_DOUBLE,
        g2: MigKind.G2,
        g3: MigKind.G3,
        g4: MigKind.G4,
        g7: MigKind.G7,
    }


_H100_80 = _profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")

CATALOG: dict[str, GpuModelSpec] = {
    m.name: m
    for m in (
        GpuModelSpec(
            "A100-40GB", 40, False, _profiles("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
        ),
        GpuModelSpec("A100-80GB", 80, False, _H100_80),
        GpuModelSpec("H100-SXM-80GB", 80, True, _H100_80),
        GpuModelSpec(
            "H100-NVL-94GB", 94, True, _profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")
        ),
        GpuModelSpec(
            "H200-141GB", 141, True, _profiles("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")
        ),
        GpuModelSpec("B200", 180, True, _profiles("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")),
        GpuModelSpec(
            "GB200",
            186,
            True,
            _profiles("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
            multi_node_nvlink=True,
        ),
    )
}

# The model names as API choices (one list, so the OpenAPI schema names one enum).
GPU_MODEL_NAMES: tuple[str, ...] = tuple(sorted(CATALOG))
