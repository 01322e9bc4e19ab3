"""The placement engine's fleet, kept in each process's memory and brought up to date from the journal.

A process builds its ``FleetState`` from the database once, then applies only the ``PlacementJournal`` entries
written since (by itself or by other processes) before every decision: no decision rebuilds the index. Every
change to placement goes through ``placement_section``, which serializes decisions across threads (a lock) and
processes (the ``PlacementLock`` row), and throws the in-memory state away if a failed step had changed it.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core.locks import lock_singleton
from core.tasks import tasks_held
from provisioning.domain.capacity_classes import DEFAULT_CLASS, CapacityClass
from provisioning.domain.placement.decision import Device, HostTake, Placement, host_takes
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.state import FleetState
from provisioning.domain.placement.state import Reservation as StateReservation
from provisioning.domain.rungs import Performance, Rung, Security
from provisioning.domain.states import HOLDS_DEVICES
from provisioning.models import (
    Allocation,
    GpuModel,
    Hall,
    Node,
    NodeHold,
    PlacementJournal,
    PlacementLock,
    Reservation,
)
from provisioning.selectors import hall_info


def placement_of(allocation: Allocation, held_nodes: tuple[int, ...]) -> Placement:
    """The engine's view of a persisted allocation: its active devices, the hosts it holds whole, and the CPU and
    memory its spec says each member took beside its GPUs."""
    devices = tuple(
        Device(
            node_id=d.gpu.node_id,  # an active device's GPU is claimed, so it cannot have been deleted
            hostname=d.hostname,
            gpu_index=d.gpu_index,
            gpu_uuid=d.gpu_uuid,
            mig_profile=d.mig_profile or None,
            mig_start=d.mig_start,
            share_milli=d.share_milli,
        )
        for d in allocation.devices.all()
        if d.active and d.gpu is not None
    )
    return Placement(
        tenant_id=allocation.tenant_id,
        rung=Rung(allocation.rung),
        performance=Performance(allocation.performance),
        security=Security(allocation.security),
        model=allocation.gpu_model.name,
        devices=devices,
        held_nodes=held_nodes,
        dedicated=allocation.dedicated,
        capacity_class=CapacityClass(allocation.capacity_class),
        reservation=allocation.reservation_id,
        host=spec_host(devices, allocation.spec),
        side=spec_side(allocation.side_node_id, allocation.spec),
    )


def spec_host(devices: Iterable[Device], spec: dict[str, Any]) -> tuple[HostTake, ...]:
    """What an allocation holds of its nodes' hosts on ``devices``: per member there, the CPU and memory its spec
    keeps (a member: the spec's whole GPUs, or one slice or share; ``host_takes``)."""
    member = int(spec.get("gpus") or 0), int(spec.get("cpu_milli") or 0), int(spec.get("memory_mib") or 0)
    return host_takes(devices, *member)


def spec_side(node_id: int | None, spec: dict[str, Any]) -> HostTake | None:
    """What an allocation's pods without a GPU hold of the node they were placed on (``Allocation.side_node``)."""
    if node_id is None:
        return None
    return HostTake(node_id, int(spec.get("side_cpu_milli") or 0), int(spec.get("side_memory_mib") or 0))


def placement_to_json(placement: Placement) -> dict[str, Any]:
    side = placement.side
    return {
        "tenant": placement.tenant_id,
        "rung": placement.rung,
        "performance": placement.performance,
        "security": placement.security,
        "model": placement.model,
        "dedicated": placement.dedicated,
        "held_nodes": list(placement.held_nodes),
        "class": placement.capacity_class,
        "reservation": placement.reservation,
        "devices": [
            [d.node_id, d.hostname, d.gpu_index, d.gpu_uuid, d.mig_profile, d.mig_start, d.share_milli]
            for d in placement.devices
        ],
        "host": [[t.node_id, t.cpu_milli, t.memory_mib] for t in placement.host],
        "side": [side.node_id, side.cpu_milli, side.memory_mib] if side is not None else None,
    }


def placement_from_json(data: dict[str, Any]) -> Placement:
    return Placement(
        tenant_id=data["tenant"],
        rung=Rung(data["rung"]),
        performance=Performance(data["performance"]),
        security=Security(data["security"]),
        model=data["model"],
        devices=tuple(Device(*d) for d in data["devices"]),
        held_nodes=tuple(data["held_nodes"]),
        dedicated=data["dedicated"],
        capacity_class=CapacityClass(data.get("class", DEFAULT_CLASS)),  # entries written before classes: on demand
        reservation=data.get("reservation"),
        host=tuple(HostTake(*t) for t in data.get("host", ())),  # entries written before hosts: none
        side=HostTake(*data["side"]) if data.get("side") else None,
    )


class FleetCache:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0  # placement sections open in the thread holding the lock (only that thread touches it)
        self.engine: PlacementEngine | None = None
        self.seq = 0
        self.placements: dict[int, Placement] = {}
        # What the pure state does not carry: GPU pk by (node pk, index); each node's hall (with its region) and
        # GPU model rows, so writing an allocation and answering with it read nothing.
        self.gpu_ids: dict[tuple[int, int], int] = {}
        self.node_rows: dict[int, tuple[Hall, GpuModel]] = {}
        # The next moment a reservation's term begins or ends (the engine holds the ones in force).
        self.reservations_until = datetime.max.replace(tzinfo=UTC)

    @property
    def state(self) -> FleetState:
        if self.engine is None:
            raise RuntimeError("the fleet is read inside placement_section or fleet_read")
        return self.engine.state

    def invalidate(self) -> None:
        self.engine = None
        self.placements = {}

    def sync(self, pruned_through: int) -> PlacementEngine:
        """The engine, up to date with every journal entry. Call inside ``placement_section``.

        ``pruned_through`` is the lock row's watermark: entries this process has not seen may be gone. A
        reservation's term beginning or ending since the fleet was read is a change too: read it again."""
        if self.engine is None or self.seq < pruned_through or timezone.now() >= self.reservations_until:
            return self._rebuild()
        for seq, op, allocation_id, node_id, placement in _journal_since(self.seq):
            if op == "fleet":
                return self._rebuild()
            self._apply(op, allocation_id, node_id, placement)
            self.seq = seq
        return self.engine

    def _apply(self, op: str, allocation_id: int | None, node_id: int | None, placement: Any) -> None:
        engine = self.engine
        assert engine is not None  # noqa: S101 - sync() rebuilt it otherwise
        if op == "placed" and allocation_id is not None and placement is not None:
            placed = placement_from_json(placement)
            engine.apply(placed)
            self.placements[allocation_id] = placed
        elif op == "released" and allocation_id in self.placements:
            engine.release(self.placements.pop(allocation_id))
        elif op == "node" and node_id is not None:
            node = Node.objects.only("state").get(pk=node_id)
            engine.state.set_node_state(node.pk, node.state)

    def _rebuild(self) -> PlacementEngine:
        """Read the whole fleet: once per process, and after a fleet load. O(fleet)."""
        last = PlacementJournal.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
        state = FleetState()
        for hall in Hall.objects.select_related("region"):
            state.add_hall(hall_info(hall))
        nodes = Node.objects.select_related("hall__region", "gpu_model").prefetch_related("gpus").order_by("pk")
        gpu_ids: dict[tuple[int, int], int] = {}
        node_rows: dict[int, tuple[Hall, GpuModel]] = {}
        for node in nodes:
            node_rows[node.pk] = (node.hall, node.gpu_model)
            gpu_ids.update({(node.pk, g.index): g.pk for g in node.gpus.all()})
            state.add_node(
                id=node.pk,
                hostname=node.hostname,
                hall=node.hall.code,
                model=node.gpu_model.name,
                gpu_uuids=[g.uuid for g in sorted(node.gpus.all(), key=lambda g: g.index)],
                nvlink_domain=node.nvlink_domain,
                versions=(node.driver_version, node.cuda_version, node.nccl_version, node.firmware_version),
                cc_capable=node.cc_capable,
                cc_mode=node.cc_mode,
                state=node.state,
                cpu_tee=node.cpu_tee or None,
                fabric=node.fabric,
                cpu_milli=node.host.cpu_milli if node.host else 0,
                memory_mib=node.host.memory_mib if node.host else 0,
            )
        self.reservations_until = _reservations_load(state, timezone.now())
        engine = PlacementEngine(state, keep_whole=settings.LADDER_KEEP_WHOLE)  # the operator's admission rule
        placements = {}
        held: dict[int, list[int]] = defaultdict(list)
        for node_id, allocation_id in NodeHold.objects.exclude(allocation=None).values_list("node_id", "allocation_id"):
            held[allocation_id].append(node_id)
        live = Allocation.objects.filter(state__in=HOLDS_DEVICES).select_related("gpu_model")
        for allocation in live.prefetch_related("devices__gpu"):
            placement = placement_of(allocation, tuple(held[allocation.pk]))
            engine.apply(placement)
            placements[allocation.pk] = placement
        self.engine, self.placements, self.seq = engine, placements, last
        self.gpu_ids, self.node_rows = gpu_ids, node_rows
        return engine


def _reservations_load(state: FleetState, now: datetime) -> datetime:
    """Put the reservations in force at ``now`` into the state; the next moment one begins or ends."""
    upcoming = Reservation.objects.filter(cancelled_at=None, ends_at__gt=now).select_related("gpu_model", "hall")
    turns = [datetime.max.replace(tzinfo=UTC)]
    for row in upcoming:
        if row.starts_at > now:
            turns.append(row.starts_at)
            continue
        turns.append(row.ends_at)
        state.reservations[row.pk] = StateReservation(
            row.pk, row.tenant_id, row.gpu_model.name, row.hall.code, row.gpus
        )
    return min(turns)


FLEET = FleetCache()


class PlacementSection:
    """What a placement change sees: the cache (engine, placements, database ids) and where to journal."""

    def __init__(self, cache: FleetCache, engine: PlacementEngine) -> None:
        self.cache = cache
        self.engine = engine
        self.last_seq: int | None = None

    def journal(
        self,
        op: str,
        *,
        allocation: Allocation | None = None,
        node: Node | None = None,
        placement: Placement | None = None,
    ) -> None:
        payload = placement_to_json(placement) if placement is not None else None
        entry = PlacementJournal.objects.create(op=op, allocation=allocation, node=node, placement=payload)
        self.journaled(entry.seq)

    def journaled(self, seq: int) -> None:
        """An entry this section wrote by other means (with the allocation it records, in one statement)."""
        self.last_seq = seq


# Every placement change reads the journal under the lock, serialized across processes, so both are plain SQL
# (the lock through ``lock_singleton``): the ORM would spend more time building them than running them.
_JOURNAL = PlacementJournal._meta.db_table


def lock_placement() -> int:
    """Take the ``PlacementLock`` row until the transaction ends (see the lock order in core/locks.py);
    returns its ``pruned_through`` watermark."""
    (pruned_through,) = lock_singleton(PlacementLock, "pruned_through")
    return int(pruned_through)


def _journal_since(seq: int) -> list[tuple[int, str, int | None, int | None, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, op, allocation_id, node_id, placement FROM {_JOURNAL} WHERE seq > %s ORDER BY seq",  # noqa: S608
            [seq],
        )
        rows = cursor.fetchall()
    # Django hands JSON columns to Python as text on both backends; decode it as the model field would.
    return [(s, op, a, n, json.loads(p) if isinstance(p, str) else p) for s, op, a, n, p in rows]


@contextmanager
def placement_section() -> Iterator[PlacementSection]:
    """Serialize a placement change: in-process lock, then the ``PlacementLock`` row, in one transaction.

    Lock order: taken after the Tenant row (tenancy/locks.py) and before allocation rows and the audit head.

    No task queued in a section runs inside it. The section's own journal entries are in memory already, and
    ``FLEET.seq`` moves past them only after the commit; a task run at the commit (``LADDER_TASKS_INLINE`` runs
    tasks where they are sent, and ``enqueue`` sends them on commit) would enter a section of its own under the
    re-entrant lock, and its ``sync()`` would apply those entries a second time (a MIG slice twice: ValueError;
    a whole GPU twice: its tenant's quota counted double). So tasks are held until the section is left, lock
    released (``tasks_held``), and a section entered while another one in this thread commits is refused.
    """
    with tasks_held(), FLEET.lock:
        if FLEET.depth and not connection.in_atomic_block:
            raise RuntimeError("placement_section entered while an enclosing section commits")
        FLEET.depth += 1
        version = None
        try:
            with transaction.atomic():
                engine = FLEET.sync(lock_placement())
                version = engine.state.version
                section = PlacementSection(FLEET, engine)
                yield section
            if section.last_seq is not None:
                FLEET.seq = max(FLEET.seq, section.last_seq)  # a nested section may have journaled later
        except BaseException:
            if FLEET.engine is not None and version is not None and FLEET.engine.state.version != version:
                FLEET.invalidate()  # the memory changed but the database did not: read it again next time
            raise
        finally:
            FLEET.depth -= 1


@contextmanager
def fleet_read() -> Iterator[FleetCache]:
    """The up-to-date fleet for a read (offerings, fragmentation): no ``PlacementLock``, nothing changes."""
    with FLEET.lock, transaction.atomic():
        watermark = PlacementLock.objects.filter(id=1).values_list("pruned_through", flat=True).first()
        FLEET.sync(watermark or 0)
        yield FLEET


def journal_fleet_changed() -> None:
    """After a fleet load: every process reads the fleet again on its next decision."""
    with placement_section() as section:
        section.journal("fleet")
        FLEET.invalidate()


def journal_prune(*, older_than: Any) -> int:
    """Delete journal entries written before ``older_than``; processes behind them rebuild on their next sync."""
    with placement_section():
        old = PlacementJournal.objects.filter(at__lt=older_than)
        last = old.order_by("-seq").values_list("seq", flat=True).first()
        if last is None:
            return 0
        deleted, _ = PlacementJournal.objects.filter(seq__lte=last).delete()
        PlacementLock.objects.filter(id=1).update(pruned_through=last)
        return deleted
