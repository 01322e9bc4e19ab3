"""MIG geometry: profiles, legal start positions and what a partly used GPU can still take.

Facts from ``docs/reference/mig-profiles.md`` (NVIDIA's tables): every MIG-capable GPU has 7 compute slices and
8 memory slices; a GPU instance occupies ``size`` memory slices from one of its profile's legal starts and
``compute`` compute slices from the shared pool of 7.

A GPU's MIG occupancy is a small value, ``MigState(mem_mask, compute_used, media_used)``: 8 bits of memory
slices, compute slices in use, and whether the single media-extension instance is taken. With 256 x 8 x 2
possible states, the legal starts and the score of every state are computed once, so a decision is a lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

COMPUTE_SLICES = 7
MEMORY_SLICES = 8


class MigKind(StrEnum):
    """Profile kinds, independent of a GPU model's names (``1g.10gb`` on an H100 is kind ``1g``)."""

    G1 = "1g"
    G1_ME = "1g+me"  # media extensions: at most one per GPU
    G1_DOUBLE = "1g.2m"  # one compute slice, two memory slices
    G2 = "2g"
    G3 = "3g"
    G4 = "4g"
    G7 = "7g"


@dataclass(frozen=True)
class MigGeometry:
    kind: MigKind
    nvml_id: int
    compute: int
    memory: int  # memory slices, also the run length from the start
    max_per_gpu: int
    starts: tuple[int, ...]


GEOMETRY: dict[MigKind, MigGeometry] = {
    g.kind: g
    for g in (
        MigGeometry(MigKind.G1, 19, 1, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        MigGeometry(MigKind.G1_ME, 20, 1, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        MigGeometry(MigKind.G1_DOUBLE, 15, 1, 2, 4, (0, 2, 4, 6)),
        MigGeometry(MigKind.G2, 14, 2, 2, 3, (0, 2, 4)),
        MigGeometry(MigKind.G3, 9, 3, 4, 2, (0, 4)),
        MigGeometry(MigKind.G4, 5, 4, 4, 1, (0,)),
        MigGeometry(MigKind.G7, 0, 7, 8, 1, (0,)),
    )
}

# How much keeping a kind placeable is worth when choosing a start: larger slices are worth far more, because
# a stranded large slice is what turns a request away; the spacing makes the preference lexicographic.
_VALUE: dict[MigKind, int] = {
    MigKind.G7: 8**6,
    MigKind.G4: 8**5,
    MigKind.G3: 8**4,
    MigKind.G2: 8**3,
    MigKind.G1_DOUBLE: 8**2,
    MigKind.G1: 8,
    MigKind.G1_ME: 1,
}


@dataclass(frozen=True, slots=True)
class MigState:
    mem_mask: int = 0  # bit i set: memory slice i is used
    compute_used: int = 0
    media_used: bool = False

    @property
    def empty(self) -> bool:
        return self.mem_mask == 0

    @property
    def free_compute(self) -> int:
        return COMPUTE_SLICES - self.compute_used

    @property
    def free_memory(self) -> int:
        return MEMORY_SLICES - bin(self.mem_mask).count("1")


EMPTY = MigState()


def _run_mask(start: int, size: int) -> int:
    return ((1 << size) - 1) << start


def legal_starts(state: MigState, kind: MigKind) -> tuple[int, ...]:
    """The start positions where an instance of ``kind`` fits on a GPU in ``state``."""
    return _legal_starts(state.mem_mask, state.compute_used, state.media_used, kind)


@cache
def _legal_starts(mem_mask: int, compute_used: int, media_used: bool, kind: MigKind) -> tuple[int, ...]:
    g = GEOMETRY[kind]
    if compute_used + g.compute > COMPUTE_SLICES or (kind is MigKind.G1_ME and media_used):
        return ()
    return tuple(s for s in g.starts if s + g.memory <= MEMORY_SLICES and not mem_mask & _run_mask(s, g.memory))


def place(state: MigState, kind: MigKind, start: int) -> MigState:
    """The state after adding an instance; raises ValueError for an illegal start."""
    if start not in legal_starts(state, kind):
        raise ValueError(f"a {kind} instance cannot start at {start} on this GPU")
    g = GEOMETRY[kind]
    return MigState(
        state.mem_mask | _run_mask(start, g.memory),
        state.compute_used + g.compute,
        state.media_used or kind is MigKind.G1_ME,
    )


def remove(state: MigState, kind: MigKind, start: int) -> MigState:
    g = GEOMETRY[kind]
    run = _run_mask(start, g.memory)
    if state.mem_mask & run != run:
        raise ValueError(f"no {kind} instance at {start}")
    return MigState(
        state.mem_mask & ~run,
        state.compute_used - g.compute,
        state.media_used and kind is not MigKind.G1_ME,
    )


def rebuild(instances: list[tuple[MigKind, int]]) -> MigState:
    """The state of a GPU holding these (kind, start) instances."""
    state = EMPTY
    for kind, start in instances:
        state = place(state, kind, start)
    return state


@cache
def placeable_value(state: MigState) -> int:
    """What a GPU in ``state`` can still take: the value-weighted count of open starts of every kind."""
    return sum(_VALUE[k] * len(legal_starts(state, k)) for k in MigKind)


def best_start(state: MigState, kind: MigKind) -> tuple[int, int] | None:
    """The legal start that leaves the most valuable capacity placeable, and the value it leaves; None if
    ``kind`` does not fit. Ties go to the lowest start (packing from slice 0 keeps the high runs whole)."""
    best: tuple[int, int] | None = None
    for start in legal_starts(state, kind):
        value = placeable_value(place(state, kind, start))
        if best is None or value > best[1]:
            best = (start, value)
    return best


def stranded_compute(state: MigState) -> int:
    """Compute slices that no instance of any kind can use any more (e.g. the 7th after two 3g)."""
    if state.empty:
        return 0
    if any(legal_starts(state, k) for k in MigKind):
        return 0
    return state.free_compute


def smallest_covering(fraction_milli: int) -> MigKind:
    """The smallest MIG kind whose compute covers a fractional request of ``fraction_milli``/1000 of a GPU."""
    for kind in (MigKind.G1, MigKind.G2, MigKind.G3, MigKind.G4, MigKind.G7):
        if GEOMETRY[kind].compute * 1000 >= fraction_milli * COMPUTE_SLICES:
            return kind
    return MigKind.G7
