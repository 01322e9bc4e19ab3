"""The judgement behind fault recovery (provisioning/drivers/kubernetes/health.py), on Node objects as the API returns
them: which conditions mean a GPU node is failing, and which do not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from provisioning.drivers.kubernetes.health import (
    DEFAULT_FAULT_CONDITIONS,
    FaultCondition,
    fault_conditions,
    node_fault,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DEFAULTS = fault_conditions(DEFAULT_FAULT_CONDITIONS)


def node(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-1"}, "status": {"conditions": list(conditions)}}


def cond(kind: str, status: str, ago: float = 3600, **extra: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": (NOW - timedelta(seconds=ago)).isoformat(), **extra}


def judge(obj: dict[str, Any], faults: Any = DEFAULTS, grace: float = 60) -> Any:
    return node_fault(obj, faults=faults, now=NOW, not_ready_grace=grace)


def test_a_healthy_node_and_one_without_evidence_are_not_failing() -> None:
    assert judge(node(cond("Ready", "True"), cond("GpuNvlinkWatch", "False"))) is None
    assert judge(node()) is None  # no Ready condition reported yet: not judged
    assert judge({"metadata": {"name": "x"}}) is None


@pytest.mark.parametrize("kind", DEFAULT_FAULT_CONDITIONS)
def test_each_condition_of_the_gpu_health_tooling_is_a_fault_at_once(kind: str) -> None:
    fault = judge(node(cond("Ready", "True"), cond(kind, "True", ago=1, reason="Fatal", message="bad")))
    assert fault is not None
    assert fault.condition == kind
    assert fault.since == NOW - timedelta(seconds=1)
    assert fault.cause == f"{kind}=True (Fatal): bad"


def test_not_ready_counts_once_it_outlasts_the_grace() -> None:
    assert judge(node(cond("Ready", "False", ago=30))) is None
    assert judge(node(cond("Ready", "Unknown", ago=61))).condition == "Ready"
    assert judge(node(cond("Ready", "False", ago=30)), grace=0).status == "False"


def test_the_tooling_says_what_broke_before_ready_does() -> None:
    fault = judge(node(cond("Ready", "Unknown"), cond("SysLogsGPUFallenOff", "True")))
    assert fault.condition == "SysLogsGPUFallenOff"


def test_the_set_is_a_setting_and_may_name_the_bad_status() -> None:
    faults = fault_conditions(["NVLinkStatus=False", " ", "GPUXIDErrors"])
    assert faults == (FaultCondition("NVLinkStatus", "False"), FaultCondition("GPUXIDErrors", "True"))
    assert judge(node(cond("Ready", "True"), cond("NVLinkStatus", "False")), faults=faults).condition == "NVLinkStatus"
    assert judge(node(cond("Ready", "True"), cond("GpuNvlinkWatch", "True")), faults=faults) is None
    with pytest.raises(ValueError, match="names a condition type"):
        FaultCondition.parse("=True")
