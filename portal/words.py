"""What each rung and isolation promise means, in plain words: shown before anything is bought; what volumes are
and do, for the Volumes page and the launch form; and how a serverless endpoint scales, for its allocation page.
One place, so the launch page, the allocation page, the Volumes page and the docs say the same thing. The promises'
words are ``provisioning.domain.promises``', which the API's offerings (and so ``ladder launch``) say too."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from provisioning.domain import promises
from provisioning.domain.rungs import RUNGS as TABLE
from provisioning.domain.rungs import Performance, RungFacts
from provisioning.domain.volumes import Attach, VolumeKind, VolumeState
from provisioning.domain.workloads import KV_CACHE, Autoscaling

# Both isolation promises, as the table of promises words them (one place: the API's offerings say the same).
PERFORMANCE = promises.PERFORMANCE
SECURITY = promises.SECURITY

# --- volumes ------------------------------------------------------------------------------------------------

VOLUME_KINDS: dict[str, str] = {
    VolumeKind.FILESYSTEM: "Filesystem: shared, read and written by many allocations at once (datasets, checkpoints, "
    "a job's shared directory).",
    VolumeKind.BLOCK: "Block: one attachment at a time, a VM's data disk.",
}
# The kinds as the create form offers them.
VOLUME_KIND_CHOICES: dict[str, str] = {
    VolumeKind.FILESYSTEM: "filesystem (shared by many allocations)",
    VolumeKind.BLOCK: "block (one VM's or host's disk)",
}
# What a volume's state means to its tenant (the Volumes page).
VOLUME_STATES: dict[str, str] = {
    VolumeState.CREATING: "being made; mountable, not billed yet",
    VolumeState.AVAILABLE: "ready, mounted by nothing",
    VolumeState.ATTACHED: "mounted by work that runs",
    VolumeState.DELETING: "being deleted: no longer mounted or billed; its data key is destroyed after the waiting "
    "period",
    VolumeState.DELETED: "deleted",
}
# How a rung's workload takes a volume, after "<kind> volumes: ".
ATTACH: dict[str, str] = {
    Attach.MOUNT: "mounted into its containers at the path you give",
    Attach.DISK: "a disk of the machine, formatted and mounted by cloud-init at the path you give",
    Attach.NETWORK_MOUNT: "a network mount that cloud-init makes at the path you give",
}
READ_ONLY = "Mounted read-only: many replicas read one volume at once (a model cache), so none of them writes to it."
PLACEMENT_FOLLOWS = "An allocation that mounts a volume runs in the volume's region."
NOT_PRICED = "not priced"


def volume_attach(facts: RungFacts) -> list[str]:
    """How the rung takes each kind of volume, one sentence a kind (none: it mounts no volume)."""
    return [f"{kind.capitalize()} volumes: {ATTACH[how]}." for kind, how in sorted(facts.volumes.items())]


# Each rung in the portal's words, as the table of rungs states them (``RungFacts.words``), for the templates.
RUNGS: dict[str, dict[str, Any]] = {
    rung.value: {
        "title": facts.words.title,
        "what": facts.words.what,
        "performance": [p.value for p in Performance if p in facts.performance],
        "security": facts.security.value,
        "unit": facts.words.unit,
        "item": facts.words.item,
        "volumes": volume_attach(facts),
        "volumes_read_only": facts.volumes_read_only,
        "volumes_refused": facts.volumes_refused,
    }
    for rung, facts in TABLE.items()
}
# What an allocation's state means to its tenant, where a state needs saying (the allocation page).
STATES = {
    "restarting": "A node under your job failed (or the fleet is being tidied): it is placed again on healthy GPUs "
    "and resumes from its last checkpoint. The time since that checkpoint is not billed.",
    "idle": "Scaled to zero: no GPU held and nothing billed. Your endpoint keeps its address; the next request "
    "wakes it (a cold start) and waits for it.",
    "queued": "Preempted spot work waiting for room: no GPU held and nothing billed. It is placed again, and resumes "
    "from its last checkpoint, as soon as capacity returns; stop it to give up.",
}


def duration(seconds: float) -> str:
    """A span of time as people say it: "45 s", "12 min", "3 h 20 min"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def _replicas(count: int) -> str:
    return f"{count} replica" + ("" if count == 1 else "s")


def autoscaling(scaling: Autoscaling) -> list[str]:
    """A serverless endpoint's autoscaling as applied, one sentence a setting (the allocation page)."""
    said = []
    if scaling.idle_seconds is not None:
        said.append(
            f"Scales to zero after {duration(scaling.idle_seconds)} with no request waiting or in flight: no GPU "
            "held and nothing billed; the next request wakes it."
        )
    else:
        said.append(f"Never scales to zero: at least {_replicas(scaling.min_replicas)} always running.")
    most = scaling.max_replicas or scaling.floor
    demand = f"Up to {_replicas(most)}, one for every {scaling.target_in_flight} requests waiting or in flight"
    if scaling.signal == KV_CACHE and scaling.kv_cache_target is not None:
        demand += f", or more when the model's KV cache is over {scaling.kv_cache_target:.0%} full"
    said.append(demand + ".")
    up = f"once demand has held for {duration(scaling.scale_up_window_s)}" if scaling.scale_up_window_s else "at once"
    down = duration(scaling.scale_down_window_s) if scaling.scale_down_window_s else "no wait"
    said.append(f"Scales up {up}; scales down after {down} of lower demand.")
    if scaling.buffer_replicas:
        said.append(f"Keeps {_replicas(scaling.buffer_replicas)} warm beyond demand while requests come in.")
    return said


def host(taken: tuple[int, int] | None, beyond: tuple[int, int] | None = None) -> str:
    """What an allocation holds of its nodes' hosts beside its GPUs (``Allocation.host``), and the part beyond its
    rung's bundle, billed by the hour (``Allocation.host_beyond``), in words."""
    if taken is None:
        return "The whole host: every core and all memory of each node."
    cores, gib = Decimal(taken[0]) / 1000, Decimal(taken[1]) / 1024
    held = f"{cores:g} vCPUs and {gib:g} GiB of memory beside its GPUs"
    extra = [
        f"{Decimal(amount) / per:g} {unit}"
        for amount, per, unit in zip(beyond or (0, 0), (1000, 1024), ("vCPUs", "GiB"), strict=True)
        if amount
    ]
    return f"{held}; {' and '.join(extra)} of them beyond the bundle, billed by the hour." if extra else f"{held}."
