"""A month of generated usage for the export tests, through the real ledger: allocations of several kinds run for
days (window closing cuts them every hour), a price change in the middle of an hour mid-month, late adjustments
(usage reported after its window closed), provider faults, and storage: a filesystem volume per tenant that grows,
and a snapshot of it, priced per GB-month (ten-place prices per GB-hour)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from billing.models import Unit
from billing.services.ledger import windows_close
from lifecycle.services.volumes import volume_create, volume_grow, volume_snapshot_create
from provisioning.domain.volumes import SnapshotState, VolumeState
from provisioning.models import AllocationFault, Region, Volume, VolumeSnapshot
from provisioning.services.volumes import snapshot_transition, volume_transition
from tenancy.models import Tenant
from tests.support import SYSTEM
from tests.support.billing import load_fleet, place, price, run, stop, storage_price

MONTH = datetime(2026, 10, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass
class Month:
    tenants: list[Tenant]
    faults: int
    price_change: datetime  # inside an hour, in the middle of the days generated


def generated_month(tenants: list[Tenant], *, days: int = 31) -> Month:
    """Usage of ``tenants`` in October 2026 (the first ``days`` days of it), every window closed."""
    load_fleet()
    price_change = MONTH + timedelta(days=days // 2, minutes=30)  # 16 Oct 00:30 for the whole month
    price("2.40", since=MONTH - timedelta(days=30))
    price("2.90", since=price_change)
    price("0.70", since=MONTH - timedelta(days=30), unit=Unit.MIG, mig_profile="3g.40gb")
    price("3.10", since=MONTH - timedelta(days=30), rung="job")
    price("2.75", since=MONTH - timedelta(days=30), rung="serverless")
    price("0.96", since=MONTH - timedelta(days=30), capacity_class="spot")  # 60% off the container GPU
    storage_price("0.07", since=MONTH - timedelta(days=30))
    storage_price("0.05", kind="snapshot", since=MONTH - timedelta(days=30))
    end = min(MONTH + timedelta(days=days), MONTH_END)
    running = []
    stored = []
    faults = 0
    for i, tenant in enumerate(tenants):
        stored.append(_storage(tenant, i))
        Tenant.objects.filter(pk=tenant.pk).update(allow_soft_sharing=True)
        tenant.refresh_from_db()
        whole = run(place(tenant, gpus=1), MONTH + timedelta(minutes=7 + i))
        mig = run(place(tenant, mig_profile="3g.40gb"), MONTH + timedelta(hours=2, minutes=13))
        job = run(place(tenant, rung="job", gpus=2), MONTH + timedelta(days=1, minutes=41))
        share = run(
            place(tenant, rung="serverless", share_mode="fractional", share_milli=250),
            MONTH + timedelta(hours=5, seconds=17),
        )
        spot = run(place(tenant, gpus=1, capacity_class="spot"), MONTH + timedelta(hours=1, minutes=3))
        running += [whole, mig, job, share, spot]
        # A provider fault under the job: 40 s of work lost (recorded as the fault path records it).
        AllocationFault.objects.create(
            tenant=tenant,
            allocation=job,
            hostname="gpu-node",
            cause="XID 79",
            fault_at=MONTH + timedelta(days=2, hours=3, minutes=1, seconds=40),
            detected_at=MONTH + timedelta(days=2, hours=3, minutes=2),
            checkpoint_at=MONTH + timedelta(days=2, hours=3, minutes=1),
            lost_ms=40_000,
            outcome="restarted",
        )
        faults += 1
    windows_close(now=end - timedelta(days=min(days, 31) // 2))
    for allocation in running[::2]:
        stop(allocation, end - timedelta(hours=3, minutes=17))
    for allocation in running[1::2]:
        stop(allocation, end - timedelta(minutes=1))
    for volume, snapshot in stored:  # deleting them stops their billing
        snapshot_transition(snapshot=snapshot, to=SnapshotState.DELETING, actor=SYSTEM, at=end - timedelta(hours=2))
        volume_transition(volume=volume, to=VolumeState.DELETING, actor=SYSTEM, at=end - timedelta(minutes=47))
    windows_close(now=end + timedelta(hours=1))
    # Usage reported after its window had closed: late adjustments (seq 1) of closed hours.
    for tenant in tenants:
        late = place(tenant, gpus=1)
        late_at = MONTH + timedelta(days=max(days - 2, 0), hours=4, minutes=20)
        stop(run(late, late_at), late_at + timedelta(minutes=30))
    windows_close(now=end + timedelta(hours=2))
    return Month(tenants, faults, price_change)


def _storage(tenant: Tenant, i: int) -> tuple[Volume, VolumeSnapshot]:
    """A 500 GB filesystem of the tenant's in eu-west from the month's first minutes, snapshotted after two hours and
    grown to 800 GB after five (each as the backend reports it, at its time)."""
    made = MONTH + timedelta(minutes=10 + i)
    region = Region.objects.get(code="eu-west")
    volume = volume_create(
        tenant=tenant, name=f"datasets-{i}", region=region, kind="filesystem", size_gb=500, actor=SYSTEM, now=made
    )
    volume_transition(volume=volume, to=VolumeState.AVAILABLE, actor=SYSTEM, at=made)
    taken = MONTH + timedelta(hours=2, minutes=30)
    snapshot = volume_snapshot_create(volume=volume, name="before-cleanup", actor=SYSTEM, now=taken)
    snapshot_transition(snapshot=snapshot, to=SnapshotState.READY, actor=SYSTEM, at=taken + timedelta(minutes=3))
    volume = volume_grow(volume=volume, size_gb=800, actor=SYSTEM, now=MONTH + timedelta(hours=5, minutes=13))
    return volume, snapshot


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def cost(rows: list[dict[str, Any]], column: str = "BilledCost") -> Decimal:
    return sum((Decimal(r[column]) for r in rows), Decimal(0))
