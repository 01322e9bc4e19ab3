"""dcgm-exporter's exposition as its template writes it, whose series are a device's, the GPU instance ids of MIG
layouts, and the findings in words (``provisioning.domain.gpu_metrics``)."""

from __future__ import annotations

from decimal import Decimal
from itertools import combinations
from pathlib import Path

from provisioning.domain.gpu_metrics import (
    FB_USED,
    FIELDS,
    POWER,
    SM_ACTIVE,
    DeviceKey,
    DeviceLabels,
    Scope,
    Slice,
    Usage,
    exact_selectors,
    exposition,
    findings,
    gpu_instance_id,
    held_runs,
    idle_tail_seconds,
    profile_memory_gb,
    selector,
)
from provisioning.domain.placement.mig import GEOMETRY, MigKind

DATA = Path(__file__).resolve().parents[3] / "docs" / "reference" / "dcgm-exporter"
GPU = DeviceLabels(
    gpu=0,
    uuid="GPU-0d1e",
    pci_bus_id="00000000:18:00.0",
    model_name="NVIDIA H100 80GB HBM3",
    hostname="euw1a-01",
    pod={"pod": "ldr-7-0", "namespace": "ladder-acme", "container": "worker"},
    driver_version="550.54.15",
)


def test_the_exposition_is_the_exporters_template() -> None:
    mig = DeviceLabels(
        gpu=1, uuid="GPU-77aa", pci_bus_id="00000000:28:00.0", model_name="NVIDIA H100 80GB HBM3",
        hostname="euw1a-01", mig_profile="1g.10gb", gpu_instance=9,
    )  # fmt: skip
    text = exposition([(GPU, {SM_ACTIVE.name: 0.5, POWER.name: 351.25}), (mig, {SM_ACTIVE.name: 0.0})])
    assert text == (
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0d1e",pci_bus_id="00000000:18:00.0",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3",hostname="euw1a-01",container="worker",namespace="ladder-acme",'
        'pod="ldr-7-0",DCGM_FI_DRIVER_VERSION="550.54.15"} 351.25\n'
        "# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.\n"
        "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"
        'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-0d1e",pci_bus_id="00000000:18:00.0",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3",hostname="euw1a-01",container="worker",namespace="ladder-acme",'
        'pod="ldr-7-0",DCGM_FI_DRIVER_VERSION="550.54.15"} 0.5\n'
        'DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-77aa",pci_bus_id="00000000:28:00.0",device="nvidia1",'
        'modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",hostname="euw1a-01"} 0\n'
    )
    assert exposition([]) == ""


def test_a_device_is_matched_by_uuid_and_a_slice_by_its_instance_only() -> None:
    whole, slice_ = DeviceKey("GPU-a"), DeviceKey("GPU-b", 9)
    assert whole.matches({"UUID": "GPU-a", "pod": "anything"})
    assert not whole.matches({"UUID": "GPU-a", "GPU_I_ID": "9"})  # an instance of it is not the whole GPU's series
    assert not whole.matches({"UUID": "GPU-c", "pod": "ldr-1-0"})  # whatever its pod labels say
    assert slice_.matches({"UUID": "GPU-b", "GPU_I_ID": "9"})
    assert not slice_.matches({"UUID": "GPU-b", "GPU_I_ID": "10"})  # a sibling instance
    assert not slice_.matches({"UUID": "GPU-b"})  # the parent GPU's own series
    assert (whole.name, slice_.name) == ("GPU-a", "GPU-b/9")
    assert DeviceKey("GPU-a", scope=Scope.GPU).matches({"UUID": "GPU-a"})
    assert selector([slice_, whole, DeviceKey("GPU-a")]) == 'UUID=~"GPU-a|GPU-b"'


def test_every_mig_layout_numbers_its_instances_apart() -> None:
    placements = [(kind, start) for kind, g in GEOMETRY.items() for start in g.starts if kind is not MigKind.G1_ME]
    for (k1, s1), (k2, s2) in combinations(placements, 2):
        g1, g2 = GEOMETRY[k1], GEOMETRY[k2]
        overlap = s1 < s2 + g2.memory and s2 < s1 + g1.memory
        if not overlap:
            assert gpu_instance_id(g1.memory, s1) != gpu_instance_id(g2.memory, s2), (k1, s1, k2, s2)
    assert gpu_instance_id(8, 0) == 0
    assert [gpu_instance_id(1, s) for s in range(7)] == [7, 8, 9, 10, 11, 12, 13]
    assert profile_memory_gb("1g.10gb+me") == 10
    assert profile_memory_gb("7g.141gb") == 141


SLICES = [Slice("1g.10gb", 10, MigKind.G1), Slice("2g.20gb", 20, MigKind.G2), Slice("7g.80gb", 80, MigKind.G7)]


def usage(sm: list[float], *, used_gb: float = 9.0, tensor: float = 0.3, whole: bool = True) -> Usage:
    points = [(60.0 * i, v) for i, v in enumerate(sm)]
    return Usage(
        step_seconds=60,
        sm_active=points,
        tensor_active=[(t, tensor) for t, _ in points],
        memory_used_gb=[(t, used_gb) for t, _ in points],
        memory_total_gb=80.0,
        whole_gpus=whole,
    )


def test_findings_say_idle_minutes_memory_to_spare_and_tensor_cores_unused() -> None:
    sixty = [0.0] * 47 + [0.6] * 13
    prices = {"whole": Decimal("3.50"), "1g.10gb": Decimal("0.50")}
    assert findings(usage(sixty), slices=SLICES, prices=prices) == [
        "idle for 47 of the last 60 minutes",
        "uses 9.0 GB of 80 GB: a `1g.10gb` slice would cost 86% less",
    ]
    assert findings(usage([0.7] * 10, tensor=0.0), slices=SLICES) == [
        "uses 9.0 GB of 80 GB: a `1g.10gb` slice would hold it",
        "tensor cores unused",
    ]
    # 19 GB needs 21 GB with headroom: no 20 GB slice, and a slice is no suggestion for what is one already.
    assert findings(usage([0.7], used_gb=19, tensor=0.0 + 0.2), slices=SLICES) == ["uses 19 GB of 80 GB"]
    assert findings(usage([0.7], whole=False), slices=SLICES) == ["uses 9.0 GB of 80 GB"]
    assert findings(usage([]), slices=SLICES) == []
    short = Usage(1, [(float(t), 0.0) for t in range(20)], [], [], 80.0, True)
    assert findings(short) == ["idle for 20 of the last 20 seconds"]
    assert FB_USED.name == "DCGM_FI_DEV_FB_USED"


def test_every_field_is_the_exporters_own_name_type_and_help() -> None:
    shipped = {}
    for name in ("default-counters.csv", "dcp-metrics-included.csv"):
        for line in (DATA / name).read_text().splitlines():
            line = line.strip().lstrip("#").strip()
            parts = [p.strip() for p in line.split(",", 2)]
            if len(parts) == 3 and parts[0].startswith("DCGM_FI_"):
                shipped[parts[0]] = (parts[1], parts[2])
    assert {f.name: (f.prom_type, f.help) for f in FIELDS} == {f.name: shipped[f.name] for f in FIELDS}


def test_an_idle_run_ends_at_work_or_at_a_gap_and_needs_a_recent_sample() -> None:
    idle = [(60.0 * i, 0.001) for i in range(11)]  # 0..600 s, idle throughout
    assert idle_tail_seconds(idle, 60, until=610) == 610
    worked = [*idle[:4], (240.0, 0.5), *idle[5:]]  # it worked at 240 s
    assert idle_tail_seconds(worked, 60, until=600) == 600 - 300
    gap = idle[:3] + idle[6:]  # nothing reported from 180 s to 300 s: no evidence of idle GPUs then
    assert idle_tail_seconds(gap, 60, until=600) == 600 - 360
    assert idle_tail_seconds(idle, 60, until=600 + 121) == 0  # nothing reported lately
    assert idle_tail_seconds([*idle, (660.0, 0.2)], 60, until=660) == 0  # working now
    assert idle_tail_seconds([], 60, until=0) == 0


def test_xids_are_classed_as_nvidia_describes_them() -> None:
    from provisioning.domain.xid import XidClass, xid

    assert [code for code in (13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95, 119) if xid(code).fatal] == [
        48, 64, 74, 79, 95, 119,
    ]  # fmt: skip
    assert xid(31).kind is XidClass.APPLICATION
    assert xid(63).kind is XidClass.INFORMATIONAL
    assert "fallen off the bus" in xid(79).meaning
    unknown = xid(999)
    assert (unknown.kind, unknown.fatal, unknown.meaning) == (
        XidClass.INFORMATIONAL,
        False,
        "XID 999 (see NVIDIA's XID catalog)",
    )


# --- reading many devices at once ------------------------------------------------------------------------------


def test_exact_selectors_match_each_device_by_its_uuid_and_its_instance_and_nothing_else() -> None:
    devices = [
        DeviceKey("GPU-b"),
        DeviceKey("GPU-a", scope=Scope.GPU),
        DeviceKey("GPU-c", 3),
        DeviceKey("GPU-d", 3),
        DeviceKey("GPU-d", 9),
    ]
    assert exact_selectors(devices) == [
        'UUID=~"GPU-a|GPU-b",GPU_I_ID=""',  # a whole GPU's series, never its MIG instances'
        'UUID=~"GPU-c|GPU-d",GPU_I_ID="3"',
        'UUID=~"GPU-d",GPU_I_ID="9"',  # not GPU-c's instance 9: the instances are selected per id
    ]
    assert exact_selectors([DeviceKey("GPU-1.2")]) == ['UUID=~"GPU-1\\\\.2",GPU_I_ID=""']


def test_held_runs_split_the_instants_where_the_devices_held_change() -> None:
    # instants 0, 10, ..., 100 (ms); device 0 held throughout, device 1 from 25 to 60, device 2 from 60
    holds = [(-5, None), (25, 60), (60, None)]
    assert held_runs(holds, start_ms=0, end_ms=100, step_ms=10) == [
        (0, 20, (0,)),
        (30, 50, (0, 1)),
        (60, 60, (0, 1, 2)),  # held at both ends: the instant 60 is either's
        (70, 100, (0, 2)),
    ]


def test_held_runs_leave_out_instants_when_nothing_is_held_and_merge_equal_neighbours() -> None:
    holds = [(20, 40), (41, 45), (70, 200)]
    assert held_runs(holds, start_ms=0, end_ms=100, step_ms=10) == [(20, 40, (0,)), (70, 100, (2,))]
    assert held_runs([(0, None), (0, None)], start_ms=0, end_ms=30, step_ms=10) == [(0, 30, (0, 1))]
    assert held_runs([(500, None)], start_ms=0, end_ms=100, step_ms=10) == []
