"""A node's host beside its GPUs: the CPU cores and memory it has, and the reserve it keeps for itself (the
kubelet, the container runtime, the GPU and network daemons). What is left is what placement sells with the GPUs
(docs/placement.md, "The whole node"; docs/fleet.md, "The host").

A fleet document states it per node, optionally::

    "host": {"cpu_cores": 96, "memory_gib": 1024, "reserved_cpu_cores": 4, "reserved_memory_gib": 32}

``cpu_cores`` and ``memory_gib`` are required in it, the reserves default to 0 and must leave the host at least one
core and one GiB. A node without ``host`` has its CPU and memory untracked: placement never limits work by them
there, as before hosts were stated. Pure Python (no Django).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from provisioning.domain.json_source import Path, json_type
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.rungs import RUNGS, Rung

MAX_CPU_CORES = 4096  # a host's cores: a 2-socket server has at most a few hundred today
MAX_MEMORY_GIB = 65536  # 64 TiB
KEYS = ("cpu_cores", "memory_gib", "reserved_cpu_cores", "reserved_memory_gib")


@dataclass(frozen=True)
class Host:
    cpu_cores: int
    memory_gib: int
    reserved_cpu_cores: int = 0
    reserved_memory_gib: int = 0

    @property
    def cpu_milli(self) -> int:
        """The CPU placement sells, in thousandths of a core: the cores less the reserve."""
        return (self.cpu_cores - self.reserved_cpu_cores) * 1000

    @property
    def memory_mib(self) -> int:
        """The memory placement sells, in MiB: the memory less the reserve."""
        return (self.memory_gib - self.reserved_memory_gib) * 1024

    def as_json(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in KEYS}


def check_host(value: object, path: Path, add: Callable[[Path, str], None]) -> tuple[Host | None, bool]:
    """The node's ``host`` (None when it states none) and whether it passed; each problem goes to ``add``."""
    if value is None:
        return None, True
    if not isinstance(value, dict):
        add(path, f"must be an object or null, not {json_type(value)}")
        return None, False
    ok = True
    for key in value:
        if key not in KEYS:
            add((*path, key), f"unknown field (expected: {', '.join(KEYS)})")
            ok = False
    found: dict[str, int] = {}
    limits = {"cpu_cores": MAX_CPU_CORES, "memory_gib": MAX_MEMORY_GIB}
    for key in KEYS:
        if key not in value:
            if key in limits:
                add((*path, key), "is required")
                ok = False
            continue
        number = value[key]
        top = limits.get(key, limits.get(key.removeprefix("reserved_"), 0))
        low = 1 if key in limits else 0
        if not isinstance(number, int) or isinstance(number, bool):
            shown = json.dumps(number) if isinstance(number, float) else json_type(number)
            add((*path, key), f"must be a whole number, not {shown}")
            ok = False
        elif not low <= number <= top:
            add((*path, key), f"must be {low} to {top}, not {number}")
            ok = False
        else:
            found[key] = number
    if not ok:
        return None, False
    host = Host(**found)
    if host.reserved_cpu_cores >= host.cpu_cores:
        add((*path, "reserved_cpu_cores"), f"must leave the host at least one of its {host.cpu_cores} cores")
        return None, False
    if host.reserved_memory_gib >= host.memory_gib:
        add((*path, "reserved_memory_gib"), f"must leave the host at least one of its {host.memory_gib} GiB")
        return None, False
    return host, True


def bundled(rung: Rung, model: str, gpus: int) -> tuple[int, int]:
    """The CPU (milli-cores) and memory (MiB) a request of ``gpus`` whole GPUs (0: a MIG slice or a soft share) of
    ``model`` on ``rung`` takes of its node's host unless it says otherwise: the rung's bundle
    (``RungFacts.host``). Bare metal takes whole hosts: nothing beside. What placement takes and what the rendered
    pods and VMs request are both this, kept on the allocation's spec when it is placed."""
    facts = RUNGS[rung]
    if facts.whole_nodes:
        return 0, 0
    bundle = facts.host
    if not gpus:
        return bundle.slice_cores * 1000, bundle.slice_gib * 1024
    gib = bundle.gib_per_gpu if bundle.gib_per_gpu is not None else 2 * CATALOG[model].memory_gb
    return bundle.cores_per_gpu * 1000 * gpus, gib * 1024 * gpus


def bundle_model(models: Sequence[str]) -> str:
    """The model whose bundle a request naming several acceptable models takes, wherever it lands: the one with the
    most GPU memory. A VM's memory is twice its GPUs' (``bundled``), so it has at least that on any of them; the
    other rungs' bundles do not depend on the model. What the request takes, what its pods and VMs request and what
    is billed beyond the bundle all read this one model."""
    return max(models, key=lambda model: CATALOG[model].memory_gb)


def member_host(rung: Rung, model: str, gpus: int, cpu_milli: int, memory_mib: int) -> tuple[int, int]:
    """What a member takes beside its ``gpus`` whole GPUs (0: a slice or a share): ``cpu_milli`` and
    ``memory_mib`` as stated, each one not stated (0; both 0: placed before hosts were placed) the rung's bundle."""
    if cpu_milli and memory_mib:
        return cpu_milli, memory_mib
    cpu, memory = bundled(rung, model, gpus)
    return cpu_milli or cpu, memory_mib or memory


def host_problems(rung: Rung, model: str, gpus: int, cpu_cores: int | None, memory_gib: int | None) -> dict[str, str]:
    """What is wrong with a request's vCPUs and GiB per member (None: not asked, the bundle), by field: each is at
    least 1 and at most ``most_times`` the rung's bundle for ``gpus`` of ``model``; bare metal takes whole hosts
    and is asked neither."""
    if cpu_cores is None and memory_gib is None:
        return {}
    facts = RUNGS[rung]
    if facts.whole_nodes:
        field = "cpu" if cpu_cores is not None else "memory_gib"
        return {field: f"{facts.words.title} takes whole hosts: every core and byte of its nodes is yours."}
    cpu, memory = bundled(rung, model, gpus)
    most = facts.host.most_times
    problems = {}
    for field, asked, top, unit in (
        ("cpu", cpu_cores, most * cpu // 1000, "vCPUs"),
        ("memory_gib", memory_gib, most * memory // 1024, "GiB of memory"),
    ):
        if asked is not None and not 1 <= asked <= top:
            problems[field] = (
                f"A member here takes 1 to {top} {unit} ({most} times the {top // most} sold with it), not {asked}."
            )
    return problems


def host_extra(rung: Rung, model: str, gpus: int, cpu_milli: int, memory_mib: int) -> tuple[int, int]:
    """The CPU (milli-cores) and memory (MiB) a member takes beyond the rung's bundle for ``gpus`` of ``model``:
    what is billed beside the GPU's price (nothing for asking less)."""
    cpu, memory = bundled(rung, model, gpus)
    taken_cpu, taken_memory = member_host(rung, model, gpus, cpu_milli, memory_mib)
    return max(0, taken_cpu - cpu), max(0, taken_memory - memory)
