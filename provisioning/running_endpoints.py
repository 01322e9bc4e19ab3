"""The gateway's view of a running allocation it may forward to, read on every call without the database: whose it
is, its tenant's calls a minute and its public ports. Kept only while the allocation runs, for at most
``ENTRY_SECONDS``, and forgotten when it enters or leaves ``running`` (``allocation_transition``), so
an endpoint gone idle is seen as idle by the next call (at once in the process that moved it; within a second in
the others with a cache every web process shares, within the bound with one cache per process). Anything not
running is read from the database each time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.core.cache import cache

from core.cache import LocalMemo, cache_forget
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import Workload
from provisioning.models import Allocation
from tenancy.selectors import endpoint_calls_per_minute


@dataclass(frozen=True)
class RunningEntry:
    allocation_id: int
    tenant_id: int
    tenant_slug: str
    endpoint: bool  # a serverless endpoint (else: an allocation with public ports, or neither)
    calls_per_minute: int
    public_ports: frozenset[int]


_NOT_RUNNING = "not running"
ENTRY_SECONDS = 5  # a rare race (read as running just as it stopped) heals within this


def _key(allocation_id: int) -> str:
    return f"gateway:running:{allocation_id}"


_memo = LocalMemo(seconds=1.0)  # this process's: every call of the hot path reads it first


def running_entry(allocation_id: int) -> RunningEntry | None:
    """The allocation while it runs; None when it does not (or is no allocation). Read from this process's memory
    of the last second, else the shared cache, else the database."""
    now = time.monotonic()
    known, entry = _memo.get(_key(allocation_id), now)
    if known:
        return entry if isinstance(entry, RunningEntry) else None
    entry = _running_entry_read(allocation_id)
    _memo.put(_key(allocation_id), entry, now)
    return entry


def _running_entry_read(allocation_id: int) -> RunningEntry | None:
    found = cache.get(_key(allocation_id))
    if isinstance(found, RunningEntry):
        return found
    if found == _NOT_RUNNING:
        return None
    allocation = (
        Allocation.objects.select_related("tenant")
        .filter(pk=allocation_id, state=AllocationState.RUNNING)
        .only("pk", "rung", "workload", "tenant")
        .first()
    )
    entry: RunningEntry | None = None
    if allocation is not None:
        workload = Workload.from_json(allocation.workload) if allocation.workload else Workload()
        entry = RunningEntry(
            allocation_id=allocation.pk,
            tenant_id=allocation.tenant_id,
            tenant_slug=allocation.tenant.slug,
            endpoint=allocation.workload_spec.facts.endpoint,
            calls_per_minute=endpoint_calls_per_minute(allocation.tenant),
            public_ports=frozenset(p.port for p in workload.public_ports()),
        )
    # A miss is kept briefly too, so a flood of calls for an idle endpoint or a made-up id reads the database once
    # a second, not once a call.
    timeout = ENTRY_SECONDS if entry is not None else 1
    cache.set(_key(allocation_id), entry or _NOT_RUNNING, timeout=timeout)
    return entry


def running_entry_forget(allocation_id: int) -> None:
    """The allocation entered or left ``running``: read it afresh on the next call (once committed)."""
    _forget([_key(allocation_id)])


def running_entries_forget(*, tenant_id: int) -> None:
    """The tenant's limits changed: read each of its running allocations afresh on the next call."""
    ids = list(
        Allocation.objects.filter(tenant_id=tenant_id, state=AllocationState.RUNNING).values_list("pk", flat=True)
    )
    _forget([_key(i) for i in ids])


def _forget(keys: list[str]) -> None:
    for key in keys:
        _memo.forget(key)
    cache_forget(*keys)
