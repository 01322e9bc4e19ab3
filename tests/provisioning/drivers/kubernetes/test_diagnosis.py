"""Node diagnosis: a healthy H100 node passes every layer, and each broken layer is the one reported."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from provisioning.domain.fleet_document import Nic, Rdma
from provisioning.drivers.kubernetes.diagnosis import (
    LADDER_TOLERATIONS,
    LAYERS,
    NOT_CHECKED,
    RDMA_LAYER,
    Diagnosis,
    diagnose_node,
)
from tests.support import ROOT

HEALTHY_LABELS = {
    "kubernetes.io/hostname": "hall1-r07-n03",
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
    "nvidia.com/gpu.deploy.mig-manager": "true",
    "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
    "nvidia.com/cuda.driver-version.full": "580.95.05",
    "nvidia.com/cuda.driver-version.major": "580",
    "nvidia.com/cuda.driver-version.minor": "95",
    "nvidia.com/cuda.driver-version.revision": "05",
    "nvidia.com/cuda.driver.major": "580",
    "nvidia.com/cuda.driver.minor": "95",
    "nvidia.com/cuda.driver.rev": "05",
    "nvidia.com/cuda.runtime-version.major": "13",
    "nvidia.com/cuda.runtime-version.minor": "0",
    "nvidia.com/gpu.compute.major": "9",
    "nvidia.com/gpu.compute.minor": "0",
    "nvidia.com/gpu.count": "8",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/gpu.machine": "PowerEdge-XE9680",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.mode": "compute",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.replicas": "1",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.clique": "7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig.config": "all-disabled",
    "nvidia.com/mig.config.state": "success",
    "nvidia.com/mps.capable": "false",
}

HEALTHY_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "hall1-r07-n03", "labels": HEALTHY_LABELS},
    "spec": {
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    },
    "status": {
        "capacity": {
            "cpu": "224",
            "memory": "2113412340Ki",
            "ephemeral-storage": "3748905236Ki",
            "pods": "110",
            "nvidia.com/gpu": "8",
        },
        "allocatable": {
            "cpu": "222",
            "memory": "2111212340Ki",
            "ephemeral-storage": "3454932450427",
            "pods": "110",
            "nvidia.com/gpu": "8",
        },
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
            {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
            {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            },
        ],
        "nodeInfo": {"containerRuntimeVersion": "containerd://2.1.4", "kubeletVersion": "v1.34.1"},
    },
}


def node(
    *,
    drop: tuple[str, ...] = (),
    labels: dict[str, str] | None = None,
    capacity: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """The healthy node with some labels dropped or changed, GPU resources replaced, taints added."""
    obj = copy.deepcopy(HEALTHY_NODE)
    for key in drop:
        obj["metadata"]["labels"].pop(key, None)
    obj["metadata"]["labels"].update(labels or {})
    for which, resources in (("capacity", capacity), ("allocatable", allocatable)):
        if resources is not None:
            kept = {k: v for k, v in obj["status"][which].items() if not k.startswith("nvidia.com/")}
            obj["status"][which] = kept | resources
    obj["spec"]["taints"] += taints or []
    obj["spec"].update(spec)
    return obj


def assert_broken(diagnosis: Diagnosis, layer: str) -> None:
    assert not diagnosis.ok
    assert diagnosis.layer == layer
    index = LAYERS.index(layer)
    assert [c.layer for c in diagnosis.checks] == list(LAYERS)
    assert [c.ok for c in diagnosis.checks[:index]] == [True] * index
    assert diagnosis.checks[index].ok is False
    assert diagnosis.checks[index].detail == diagnosis.summary
    for later in diagnosis.checks[index + 1 :]:
        assert later.ok is None
        assert later.status == NOT_CHECKED
        assert later.detail == NOT_CHECKED


# --- the healthy node -------------------------------------------------------------------------------------------


def test_it_passes_every_layer_on_a_healthy_h100_node():
    diagnosis = diagnose_node(HEALTHY_NODE, expected_gpus=8)
    assert diagnosis.ok
    assert diagnosis.layer is None
    assert diagnosis.node == "hall1-r07-n03"
    assert [(c.layer, c.status) for c in diagnosis.checks] == [(layer, "ok") for layer in LAYERS]
    assert diagnosis.summary == "all layers healthy: 8 x NVIDIA-H100-80GB-HBM3 offered to the scheduler"
    assert diagnosis.evidence["nvidia.com/cuda.driver-version.full"] == "580.95.05"
    assert diagnosis.evidence["allocatable"] == {"nvidia.com/gpu": 8}


def test_it_serialises_for_the_api():
    payload = diagnose_node(node(allocatable={"nvidia.com/gpu": "6"}), expected_gpus=8).as_dict()
    assert json.loads(json.dumps(payload)) == payload
    assert payload["layer"] == "allocatable"
    assert [(c["layer"], c["status"]) for c in payload["checks"]] == [
        ("node", "ok"),
        ("driver", "ok"),
        ("toolkit", "ok"),
        ("device_plugin", "ok"),
        ("allocatable", "failed"),
    ]


def test_it_reads_the_python_clients_to_dict_shape():
    obj = copy.deepcopy(HEALTHY_NODE)
    obj["spec"] = {"taints": None, "unschedulable": None}
    obj["status"]["node_info"] = {"container_runtime_version": "containerd://2.1.4"}
    del obj["status"]["nodeInfo"]
    diagnosis = diagnose_node(obj, expected_gpus=8)
    assert diagnosis.ok
    assert diagnosis.evidence["containerRuntimeVersion"] == "containerd://2.1.4"


# --- node -------------------------------------------------------------------------------------------------------


def test_it_reports_a_not_ready_node_with_the_conditions_reason():
    obj = node()
    obj["status"]["conditions"][-1] = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime network not ready",
    }
    diagnosis = diagnose_node(obj, expected_gpus=8)
    assert_broken(diagnosis, "node")
    assert diagnosis.summary == "node not ready (Ready=False): KubeletNotReady: container runtime network not ready"
    assert diagnosis.evidence["ready"]["reason"] == "KubeletNotReady"


def test_it_reports_a_node_whose_kubelet_stopped_posting():
    obj = node()
    obj["status"]["conditions"][-1] = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
    diagnosis = diagnose_node(obj, expected_gpus=8)
    assert_broken(diagnosis, "node")
    assert diagnosis.summary == "node not ready (Ready=Unknown): NodeStatusUnknown"


def test_it_reports_a_node_without_a_ready_condition():
    obj = node()
    obj["status"]["conditions"] = []
    diagnosis = diagnose_node(obj, expected_gpus=8)
    assert_broken(diagnosis, "node")
    assert diagnosis.evidence == {"ready": None}


# --- driver -----------------------------------------------------------------------------------------------------

DRIVER_LABELS = tuple(k for k in HEALTHY_LABELS if k.startswith("nvidia.com/cuda.driver"))


def test_it_reports_missing_driver_labels_as_the_driver_layer():
    diagnosis = diagnose_node(node(drop=DRIVER_LABELS), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary == (
        "no NVIDIA driver reported: no driver version labels; nvidia.com/gpu.deploy.driver=true"
    )
    assert diagnosis.evidence["nvidia.com/cuda.driver-version.major"] is None
    assert diagnosis.evidence["nvidia.com/cuda.driver.major"] is None
    assert diagnosis.evidence["nvidia.com/gpu.deploy.driver"] == "true"
    assert diagnosis.evidence["nvidia.com/gpu.present"] == "true"


def test_it_says_when_nothing_runs_to_report_the_driver():
    labels = {"nvidia.com/gpu.deploy.driver": "pre-installed", "nvidia.com/gpu.deploy.gpu-feature-discovery": "false"}
    diagnosis = diagnose_node(node(drop=DRIVER_LABELS, labels=labels), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert "the host's pre-installed driver does not answer" in diagnosis.summary
    assert "GPU feature discovery is not deployed (nvidia.com/gpu.deploy.gpu-feature-discovery=false)" in (
        diagnosis.summary
    )


def test_it_accepts_the_deprecated_driver_label_alone():
    drop = tuple(k for k in DRIVER_LABELS if "driver-version" in k)
    assert diagnose_node(node(drop=drop), expected_gpus=8).ok


def test_it_reports_gpus_the_driver_no_longer_sees():
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu.count": "7"}), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary == "driver 580.95.05 sees 7 of 8 GPUs (nvidia.com/gpu.count=7)"
    assert diagnosis.evidence["expected_gpus"] == 8


def test_it_reports_a_failed_driver_upgrade():
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu-driver-upgrade-state": "upgrade-failed"}), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary == "driver upgrade failed (nvidia.com/gpu-driver-upgrade-state=upgrade-failed)"


def test_it_reports_a_driver_upgrade_in_flight():
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu-driver-upgrade-state": "drain-required"}), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary == "driver upgrade in progress (nvidia.com/gpu-driver-upgrade-state=drain-required)"


def test_it_reports_a_node_the_gpu_operator_has_not_taken():
    diagnosis = diagnose_node(node(drop=("nvidia.com/gpu.present",)), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary.startswith("the GPU operator has not taken this node")
    assert diagnosis.evidence["feature.node.kubernetes.io/pci-10de.present"] == "true"


def test_it_reports_operands_switched_off():
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu.deploy.operands": "false"}), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert (
        diagnosis.summary
        == "GPU operator operands are switched off for this node (nvidia.com/gpu.deploy.operands=false)"
    )


# --- toolkit ----------------------------------------------------------------------------------------------------


def test_it_reports_no_toolkit_evidence():
    diagnosis = diagnose_node(node(drop=("nvidia.com/gpu.deploy.container-toolkit",)), expected_gpus=8)
    assert_broken(diagnosis, "toolkit")
    assert diagnosis.summary == "no container toolkit evidence: nvidia.com/gpu.deploy.container-toolkit is unset"
    assert diagnosis.evidence["nvidia.com/gpu.deploy.container-toolkit"] is None
    assert diagnosis.evidence["containerRuntimeVersion"] == "containerd://2.1.4"


@pytest.mark.parametrize(
    ("value", "summary"),
    [
        ("false", "container toolkit is disabled on this node (nvidia.com/gpu.deploy.container-toolkit=false)"),
        (
            "paused-for-driver-upgrade",
            "container toolkit is paused by the GPU operator "
            "(nvidia.com/gpu.deploy.container-toolkit=paused-for-driver-upgrade)",
        ),
    ],
)
def test_it_reports_a_toolkit_that_is_not_deployed(value, summary):
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu.deploy.container-toolkit": value}), expected_gpus=8)
    assert_broken(diagnosis, "toolkit")
    assert diagnosis.summary == summary


# --- device plugin ----------------------------------------------------------------------------------------------


def test_it_reports_a_device_plugin_that_is_not_deployed():
    diagnosis = diagnose_node(node(labels={"nvidia.com/gpu.deploy.device-plugin": "false"}), expected_gpus=8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == "device plugin is disabled on this node (nvidia.com/gpu.deploy.device-plugin=false)"


def test_it_reports_zero_capacity_while_gfd_counts_eight():
    diagnosis = diagnose_node(node(capacity={"nvidia.com/gpu": "0"}, allocatable={"nvidia.com/gpu": "0"}), 8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == (
        "device plugin advertises 0 of 8 expected whole GPUs (nvidia.com/gpu) while nvidia.com/gpu.count=8"
    )
    assert diagnosis.evidence["capacity"] == {"nvidia.com/gpu": 0}
    assert diagnosis.evidence["nvidia.com/gpu.count"] == "8"


def test_it_reports_a_gpu_resource_that_was_never_registered():
    diagnosis = diagnose_node(node(capacity={}, allocatable={}), expected_gpus=8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.evidence["capacity"] == {}
    assert diagnosis.summary.startswith("device plugin advertises 0 of 8 expected whole GPUs")


def test_it_reports_a_failed_mig_reconfiguration():
    labels = {"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": "failed"}
    diagnosis = diagnose_node(node(labels=labels, capacity={"nvidia.com/gpu": "0"}), 8, {"1g.10gb": 56})
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == "MIG reconfiguration failed: nvidia.com/mig.config.state=failed (target all-1g.10gb)"
    assert diagnosis.evidence["nvidia.com/mig.config"] == "all-1g.10gb"


def test_it_reports_a_mig_reconfiguration_in_progress_rather_than_the_paused_plugin():
    labels = {
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/mig.config.state": "pending",
        "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
    }
    diagnosis = diagnose_node(node(labels=labels), 8, {"1g.10gb": 56})
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == (
        "MIG reconfiguration in progress: nvidia.com/mig.config.state=pending (target all-1g.10gb)"
    )


def test_it_reports_the_single_mig_strategy():
    labels = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/gpu.count": "56",
    }
    diagnosis = diagnose_node(node(labels=labels, capacity={"nvidia.com/gpu": "56"}), 8, {"1g.10gb": 56})
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary.endswith("Ladder needs mixed")


def test_it_accepts_a_mixed_strategy_node_matching_the_expected_mig_devices():
    labels = {"nvidia.com/mig.config": "custom-one-1g.10gb", "nvidia.com/mig-1g.10gb.count": "7"}
    resources = {"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "7"}
    obj = node(labels=labels, capacity=resources, allocatable=resources)
    diagnosis = diagnose_node(obj, expected_gpus=8, expected_mig={"1g.10gb": 7})
    assert diagnosis.ok, diagnosis.summary
    assert diagnosis.summary == (
        "all layers healthy: 7 x NVIDIA-H100-80GB-HBM3, 7 x mig-1g.10gb offered to the scheduler"
    )
    assert diagnose_node(obj, 8, {"mig-1g.10gb": 7}, expected_mig_gpus=1).ok


def test_it_reports_missing_mig_devices():
    resources = {"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "6"}
    diagnosis = diagnose_node(node(capacity=resources, allocatable=resources), 8, {"1g.10gb": 7})
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == "device plugin advertises 6 of 7 expected nvidia.com/mig-1g.10gb"
    assert diagnosis.evidence["expected_mig"] == {"1g.10gb": 7}


def test_it_reports_mig_devices_the_inventory_does_not_expect():
    resources = {"nvidia.com/gpu": "7", "nvidia.com/mig-3g.40gb": "2"}
    diagnosis = diagnose_node(node(capacity=resources, allocatable=resources), expected_gpus=8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == "device plugin advertises 2 nvidia.com/mig-3g.40gb the inventory does not expect"


def test_it_pins_whole_gpus_when_the_mig_gpu_count_is_known():
    resources = {"nvidia.com/gpu": "6", "nvidia.com/mig-1g.10gb": "7"}
    obj = node(capacity=resources, allocatable=resources)
    assert diagnose_node(obj, 8, {"1g.10gb": 7}).ok  # one to seven GPUs could hold the seven slices
    diagnosis = diagnose_node(obj, 8, {"1g.10gb": 7}, expected_mig_gpus=1)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary.startswith("device plugin advertises 6 of 7 expected whole GPUs")


def test_it_accepts_a_fully_cut_node():
    resources = {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}
    obj = node(labels={"nvidia.com/mig.config": "all-1g.10gb"}, capacity=resources, allocatable=resources)
    assert diagnose_node(obj, 8, {"1g.10gb": 56}).ok


def test_it_divides_time_slicing_replicas():
    labels = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    resources = {"nvidia.com/gpu": "32"}
    assert diagnose_node(node(labels=labels, capacity=resources, allocatable=resources), 8).ok
    short = {"nvidia.com/gpu": "28"}
    diagnosis = diagnose_node(node(labels=labels, capacity=short, allocatable=short), 8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary.endswith(", 4 replicas each")


# --- allocatable, cordon, taints --------------------------------------------------------------------------------


def test_it_reports_allocatable_below_capacity():
    diagnosis = diagnose_node(node(allocatable={"nvidia.com/gpu": "0"}), expected_gpus=8)
    assert_broken(diagnosis, "allocatable")
    assert diagnosis.summary == ("0 of 8 nvidia.com/gpu allocatable: the device plugin reports 8 unhealthy")
    assert diagnosis.evidence["allocatable"] == {"nvidia.com/gpu": 0}
    assert diagnosis.evidence["capacity"] == {"nvidia.com/gpu": 8}


def test_it_reports_a_cordoned_node():
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    diagnosis = diagnose_node(node(unschedulable=True, taints=[taint]), expected_gpus=8)
    assert_broken(diagnosis, "allocatable")
    assert diagnosis.summary == "node is cordoned (spec.unschedulable=true)"
    assert diagnosis.evidence["unschedulable"] is True


def test_it_reports_an_untolerated_noschedule_taint():
    taint = {"key": "hall1.example.com/maintenance", "value": "psu-swap", "effect": "NoSchedule"}
    diagnosis = diagnose_node(node(taints=[taint]), expected_gpus=8)
    assert_broken(diagnosis, "allocatable")
    assert (
        diagnosis.summary == "taint hall1.example.com/maintenance=psu-swap:NoSchedule is not tolerated by Ladder's pods"
    )
    assert {"key": "hall1.example.com/maintenance", "value": "psu-swap", "effect": "NoSchedule"} in (
        diagnosis.evidence["taints"]
    )


def test_it_reports_a_gpu_taint_with_an_effect_ladder_does_not_tolerate():
    taint = {"key": "nvidia.com/gpu", "value": "xid-79", "effect": "NoExecute"}
    diagnosis = diagnose_node(node(taints=[taint]), expected_gpus=8)
    assert_broken(diagnosis, "allocatable")
    assert diagnosis.summary == "taint nvidia.com/gpu=xid-79:NoExecute is not tolerated by Ladder's pods"


def test_it_ignores_prefer_no_schedule_and_honours_given_tolerations():
    soft = {"key": "hall1.example.com/draining-soon", "effect": "PreferNoSchedule"}
    hard = {"key": "hall1.example.com/maintenance", "value": "psu-swap", "effect": "NoSchedule"}
    assert diagnose_node(node(taints=[soft]), expected_gpus=8).ok
    tolerations = [
        *LADDER_TOLERATIONS,
        {"key": "hall1.example.com/maintenance", "operator": "Equal", "value": "psu-swap"},
    ]
    assert diagnose_node(node(taints=[hard]), expected_gpus=8, tolerations=tolerations).ok
    assert not diagnose_node(node(taints=[hard]), expected_gpus=8, tolerations=[]).ok


def test_it_treats_a_dedicated_taint_as_information_not_a_fault():
    taint = {"key": "ladder.io/dedicated", "value": "acme", "effect": "NoSchedule"}
    diagnosis = diagnose_node(node(taints=[taint], labels={"ladder.io/dedicated": "acme"}), expected_gpus=8)
    assert diagnosis.ok
    assert diagnosis.evidence["dedicated"] == "acme"
    assert diagnosis.summary.endswith("; dedicated to tenant acme (ladder.io/dedicated taint, expected)")
    allocatable = diagnosis.checks[-1]
    assert allocatable.ok is True
    assert "dedicated to tenant acme" in allocatable.detail


# --- passthrough and confidential-computing hosts ---------------------------------------------------------------

PASSTHROUGH_LABELS = {
    "nvidia.com/gpu.workload.config": "vm-passthrough",
    "nvidia.com/gpu.deploy.vfio-manager": "true",
    "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
    "nvidia.com/gpu.deploy.sandbox-validator": "true",
    "nvidia.com/gpu.deploy.cc-manager": "true",
    "nvidia.com/cc.mode": "on",
    "nvidia.com/cc.mode.state": "on",
    "nvidia.com/cc.ready.state": "true",
}
CONTAINER_ONLY = (
    *DRIVER_LABELS,
    "nvidia.com/gpu.deploy.container-toolkit",
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "nvidia.com/gpu.count",
)


def passthrough_node(**labels: str) -> dict[str, Any]:
    resources = {"nvidia.com/GH100_H100_SXM5_80GB": "8"}
    return node(drop=CONTAINER_ONLY, labels=PASSTHROUGH_LABELS | labels, capacity=resources, allocatable=resources)


def test_it_passes_a_confidential_passthrough_host():
    diagnosis = diagnose_node(passthrough_node(), expected_gpus=8)
    assert diagnosis.ok, diagnosis.summary
    assert diagnosis.checks[2].detail.startswith("not applicable")
    assert "8 x nvidia.com/GH100_H100_SXM5_80GB" in diagnosis.summary


def test_it_reports_a_cc_mode_that_was_not_applied():
    diagnosis = diagnose_node(passthrough_node(**{"nvidia.com/cc.mode.state": "off"}), expected_gpus=8)
    assert_broken(diagnosis, "driver")
    assert diagnosis.summary == "confidential-computing mode not applied: wanted on, state off"


def test_it_reports_a_passthrough_host_short_of_gpus():
    obj = passthrough_node()
    obj["status"]["capacity"]["nvidia.com/GH100_H100_SXM5_80GB"] = "7"
    diagnosis = diagnose_node(obj, expected_gpus=8)
    assert_broken(diagnosis, "device_plugin")
    assert diagnosis.summary == "sandbox device plugin advertises 7 of 8 passthrough GPUs"


# --- structure --------------------------------------------------------------------------------------------------

DROPPABLE = sorted(k for k in HEALTHY_LABELS if k.startswith("nvidia.com/") or k.startswith("feature."))


@given(st.sets(st.sampled_from(DROPPABLE), max_size=6), st.integers(min_value=0, max_value=9))
def test_it_reports_at_most_one_broken_layer_and_checks_nothing_after_it(dropped, gpus):
    diagnosis = diagnose_node(node(drop=tuple(dropped)), expected_gpus=gpus)
    statuses = [c.status for c in diagnosis.checks]
    assert [c.layer for c in diagnosis.checks] == list(LAYERS)
    if diagnosis.ok:
        assert statuses == ["ok"] * len(LAYERS)
        assert diagnosis.layer is None
    else:
        index = statuses.index("failed")
        assert diagnosis.layer == LAYERS[index]
        assert statuses == ["ok"] * index + ["failed"] + [NOT_CHECKED] * (len(LAYERS) - index - 1)


# --- deploy/kustomize/tenant-rbac/rbac.yaml ---------------------------------------------------------------------------


def test_it_ships_rbac_that_parses_and_names_every_rule():
    documents = [
        d for d in yaml.safe_load_all((ROOT / "deploy" / "kustomize" / "tenant-rbac" / "rbac.yaml").read_text()) if d
    ]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    assert ("ServiceAccount", "ladder") in kinds
    assert ("ClusterRole", "ladder-provisioner") in kinds
    assert ("ClusterRole", "ladder-cluster-setup") in kinds
    assert ("ClusterRoleBinding", "ladder-provisioner") in kinds
    for document in documents:
        if document["kind"] == "ServiceAccount":
            assert document["metadata"]["namespace"] == "ladder-system"
        for rule in document.get("rules", []):
            assert rule["apiGroups"] is not None
            assert rule["resources"]
            assert rule["verbs"]
            assert "*" not in rule["verbs"]
            assert "*" not in rule["resources"]
    binding = next(
        d for d in documents if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "ladder-provisioner"
    )
    assert binding["roleRef"]["name"] == "ladder-provisioner"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ladder", "namespace": "ladder-system"}]


# --- nodes served by the NVIDIA DRA driver ----------------------------------------------------------------------


def dra_node(**kw: Any) -> dict[str, Any]:
    """The healthy node with the device plugin off and no nvidia.com/gpu resources: the DRA driver serves it."""
    return node(labels={"nvidia.com/gpu.deploy.device-plugin": "false"}, capacity={}, allocatable={}, **kw)


def dra_slice(gpus: int = 8, mig: tuple[str, ...] = (), node_name: str = "hall1-r07-n03") -> dict[str, Any]:
    devices: list[dict[str, Any]] = [
        {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "uuid": {"string": f"gpu-{i:08x}"}}}
        for i in range(gpus)
    ]
    devices += [
        {"name": f"gpu-7-mig-{p}-{i}", "attributes": {"type": {"string": "mig"}, "profile": {"string": p}}}
        for i, p in enumerate(mig)
    ]
    spec = {"driver": "gpu.nvidia.com", "nodeName": node_name, "pool": {"name": node_name, "generation": 1}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "spec": {**spec, "devices": devices}}


def test_a_node_served_by_the_dra_driver_is_read_from_its_resource_slices():
    found = diagnose_node(dra_node(), expected_gpus=8, resource_slices=[dra_slice(), dra_slice(node_name="other")])
    assert found.ok, found.summary
    plugin = next(c for c in found.checks if c.layer == "device_plugin")
    assert plugin.evidence["served_by"] == "dra"
    assert plugin.evidence["dra_devices"] == {"gpu": 8}
    assert "DRA gpu.nvidia.com" in plugin.detail


def test_a_dra_node_missing_gpus_or_mig_devices_is_reported():
    assert_broken(diagnose_node(dra_node(), expected_gpus=8, resource_slices=[dra_slice(gpus=6)]), "device_plugin")
    cut = dra_slice(gpus=7, mig=("3g.40gb",))
    assert diagnose_node(dra_node(), 8, {"3g.40gb": 2}, expected_mig_gpus=1, resource_slices=[cut]).summary == (
        "DRA driver publishes 1 of 2 expected MIG devices 3g.40gb"
    )
    cut = dra_slice(gpus=7, mig=("3g.40gb", "3g.40gb"))
    assert diagnose_node(dra_node(), 8, {"3g.40gb": 2}, expected_mig_gpus=1, resource_slices=[cut]).ok


def test_a_node_served_by_both_the_device_plugin_and_the_dra_driver_is_a_fault():
    found = diagnose_node(node(), expected_gpus=8, resource_slices=[dra_slice()])
    assert_broken(found, "device_plugin")
    assert "handed out twice" in found.summary


def test_a_tainted_dra_device_is_not_allocatable():
    sliced = dra_slice()
    sliced["spec"]["devices"][3]["taints"] = [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}]
    found = diagnose_node(dra_node(), expected_gpus=8, resource_slices=[sliced])
    assert_broken(found, "allocatable")
    assert found.evidence["tainted_devices"] == ["gpu-3"]


def test_without_resource_slices_a_node_is_read_as_a_device_plugin_node():
    assert_broken(diagnose_node(dra_node(), expected_gpus=8), "device_plugin")


# --- the RDMA layer -----------------------------------------------------------------------------------------------

FABRIC = Rdma(
    fabric="eu-west-1a/ib-0",
    link_layer="infiniband",
    nics=tuple(Nic(f"mlx5_{i}", i, (i,)) for i in range(8)),
    rate_gbps=400,
)


def port(
    state: str = "4: ACTIVE",
    phys_state: str = "5: LinkUp",
    rate: str = "400 Gb/sec (4X NDR)",
    link_layer: str = "InfiniBand",
    pcie: tuple[int, int] = (16, 16),
) -> str:
    """The reporter DaemonSet's annotation for one port, as it reads it from sysfs."""
    reading = {"state": state, "phys_state": phys_state, "rate": rate, "link_layer": link_layer}
    return json.dumps(reading | {"pcie_width": pcie[0], "pcie_max_width": pcie[1]})


def rdma_node(ports: Mapping[str, str | None] | None = None, **labels: str) -> dict[str, Any]:
    """The healthy node with its eight NICs reported healthy, some replaced (None: not reported at all)."""
    obj = node(labels=labels)
    readings: dict[str, str | None] = {f"mlx5_{i}": port() for i in range(8)}
    readings.update(ports or {})
    obj["metadata"]["annotations"] = {f"rdma.ladder.io/{dev}": text for dev, text in readings.items() if text}
    return obj


def nic_slice(states: dict[str, str], node_name: str = "hall1-r07-n03") -> dict[str, Any]:
    """A DraNet ResourceSlice publishing the node's RDMA NICs with their interfaces' states."""
    devices = [
        {
            "name": f"pci-0000-{i:02x}-00-0",
            "attributes": {
                "dra.net/rdma": {"bool": True},
                "dra.net/rdmaDevice": {"string": dev},
                "dra.net/ifName": {"string": f"ib{i}"},
                "dra.net/state": {"string": state},
            },
        }
        for i, (dev, state) in enumerate(sorted(states.items()))
    ]
    spec = {"driver": "dra.net", "nodeName": node_name, "pool": {"name": node_name}, "devices": devices}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "spec": spec}


def nic(diagnosis: Diagnosis, device: str) -> dict[str, Any]:
    return next(r for r in diagnosis.checks[-1].evidence["rdma"]["nics"] if r["device"] == device)


def assert_rdma_broken(diagnosis: Diagnosis) -> None:
    assert not diagnosis.ok
    assert diagnosis.layer == RDMA_LAYER
    assert [(c.layer, c.ok) for c in diagnosis.checks] == [(layer, True) for layer in LAYERS] + [(RDMA_LAYER, False)]


def test_a_node_with_its_nics_up_at_the_fleets_rate_passes_the_rdma_layer():
    diagnosis = diagnose_node(rdma_node(), expected_gpus=8, rdma=FABRIC)
    assert diagnosis.ok, diagnosis.summary
    assert [c.layer for c in diagnosis.checks] == [*LAYERS, RDMA_LAYER]
    assert diagnosis.checks[-1].detail == "8 RDMA NICs up on fabric eu-west-1a/ib-0 (infiniband, 400 Gb/s)"
    assert diagnosis.summary.endswith("; 8 RDMA NICs up on fabric eu-west-1a/ib-0 (infiniband, 400 Gb/s)")
    assert {r["finding"] for r in diagnosis.evidence["rdma"]["nics"]} == {"ok"}
    reading = nic(diagnosis, "mlx5_0")
    assert (reading["state"], reading["phys_state"], reading["rate_gbps"], reading["width"]) == (
        "ACTIVE",
        "LinkUp",
        400,
        "4X",
    )


def test_a_node_without_rdma_nics_gets_no_rdma_layer_whatever_its_annotations_say():
    diagnosis = diagnose_node(rdma_node({"mlx5_0": port(state="1: DOWN")}), expected_gpus=8)
    assert diagnosis.ok
    assert [c.layer for c in diagnosis.checks] == list(LAYERS)
    assert "rdma" not in diagnosis.evidence


def test_a_nic_whose_link_is_down_is_named_with_its_rail_and_evidence():
    down = port(state="1: DOWN", phys_state="2: Polling", rate="10 Gb/sec (4X SDR)")
    diagnosis = diagnose_node(rdma_node({"mlx5_3": down}), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary == (
        "RDMA NIC mlx5_3 (rail 3) link down (state=DOWN, phys_state=Polling): "
        "no peer answers: cable, transceiver or switch port"
    )
    reading = nic(diagnosis, "mlx5_3")
    assert (reading["finding"], reading["sources"]) == ("down", ["rdma.ladder.io/mlx5_3"])
    assert nic(diagnosis, "mlx5_2")["finding"] == "ok"


def test_a_port_up_without_a_subnet_manager_is_not_active():
    diagnosis = diagnose_node(rdma_node({"mlx5_0": port(state="2: INIT")}), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary.startswith("RDMA NIC mlx5_0 (rail 0) link up but INIT, not ACTIVE")
    assert nic(diagnosis, "mlx5_0")["finding"] == "not_active"


def test_a_nic_nothing_reports_is_missing():
    diagnosis = diagnose_node(rdma_node({"mlx5_5": None}), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary.startswith(
        "RDMA NIC mlx5_5 (rail 5) missing: no rdma.ladder.io/mlx5_5 annotation and no dra.net device names it"
    )
    reading = nic(diagnosis, "mlx5_5")
    assert (reading["present"], reading["finding"], reading["sources"]) == (False, "missing", [])


@pytest.mark.parametrize(
    ("reading", "expected"),
    [
        (port(rate="200 Gb/sec (2X NDR)"), "trained at 200 Gb/s (2X NDR), below the fleet's 400 Gb/s"),
        (port(rate="200 Gb/sec (4X HDR)"), "trained at 200 Gb/s (4X HDR), below the fleet's 400 Gb/s"),
        (port(pcie=(8, 16)), "PCIe link at x8 of x16, the host side caps its bandwidth"),
    ],
)
def test_a_port_up_at_a_degraded_rate_or_width_is_the_failure_that_halves_bandwidth(reading, expected):
    diagnosis = diagnose_node(rdma_node({"mlx5_6": reading}), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary == f"RDMA NIC mlx5_6 (rail 6) degraded: {expected}"
    assert nic(diagnosis, "mlx5_6")["finding"] == "degraded"


def test_without_a_stated_rate_a_nic_is_compared_with_its_fastest_peer():
    unstated = Rdma(FABRIC.fabric, FABRIC.link_layer, FABRIC.nics)
    diagnosis = diagnose_node(rdma_node({"mlx5_1": port(rate="200 Gb/sec (2X NDR)")}), expected_gpus=8, rdma=unstated)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary.endswith("trained at 200 Gb/s (2X NDR), below its fastest peer's 400 Gb/s")
    everyone_slow = {f"mlx5_{i}": port(rate="200 Gb/sec (4X HDR)") for i in range(8)}
    assert diagnose_node(rdma_node(everyone_slow), expected_gpus=8, rdma=unstated).ok  # nothing to compare with
    assert not diagnose_node(rdma_node(everyone_slow), expected_gpus=8, rdma=FABRIC).ok  # the fleet says 400


def test_a_port_in_the_other_link_layer_is_reported():
    diagnosis = diagnose_node(rdma_node({"mlx5_4": port(link_layer="Ethernet")}), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert "mlx5_4 (rail 4) runs link layer Ethernet but fabric eu-west-1a/ib-0 is infiniband" in diagnosis.summary


def test_several_faults_are_listed_worst_first():
    ports = {"mlx5_1": port(rate="200 Gb/sec (2X NDR)"), "mlx5_7": None, "mlx5_2": port(state="1: DOWN")}
    diagnosis = diagnose_node(rdma_node(ports), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary.startswith("3 of 8 RDMA NICs faulty: mlx5_7 (rail 7) missing")
    assert diagnosis.summary.index("mlx5_2 (rail 2) link down") < diagnosis.summary.index("mlx5_1 (rail 1) degraded")


@pytest.mark.parametrize(
    ("labels", "why"),
    [
        ({"network.nvidia.com/operator.mofed.wait": "true"}, "OFED driver is not ready"),
        ({"feature.node.kubernetes.io/rdma.capable": "true"}, "ib_uverbs and rdma_ucm are not loaded"),
        ({"feature.node.kubernetes.io/custom-rdma.capable": "true"}, "ib_uverbs and rdma_ucm are not loaded"),
        ({}, "sees no NIC of vendor 15b3"),
    ],
)
def test_when_no_nic_is_reported_the_node_labels_say_why(labels, why):
    nothing: dict[str, str | None] = {f"mlx5_{i}": None for i in range(8)}
    diagnosis = diagnose_node(rdma_node(nothing, **labels), expected_gpus=8, rdma=FABRIC)
    assert_rdma_broken(diagnosis)
    assert diagnosis.summary.startswith("none of the 8 RDMA NICs is reported: ")
    assert why in diagnosis.summary


def test_without_nfd_nor_any_report_the_reporter_is_what_is_missing():
    bare = rdma_node({f"mlx5_{i}": None for i in range(8)})
    del bare["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"]
    diagnosis = diagnose_node(bare, expected_gpus=8, rdma=FABRIC)
    assert "is the RDMA reporter DaemonSet (or DraNet) running here?" in diagnosis.summary


def test_dranet_resource_slices_show_presence_and_link_state():
    states = {f"mlx5_{i}": "up" for i in range(8)}
    unreported = rdma_node({f"mlx5_{i}": None for i in range(8)})
    healthy = diagnose_node(unreported, expected_gpus=8, rdma=FABRIC, resource_slices=[nic_slice(states)])
    assert healthy.ok, healthy.summary
    assert healthy.checks[-1].detail.endswith("(infiniband, rate not reported)")
    assert nic(healthy, "mlx5_0")["sources"] == ["dra.net device pci-0000-00-00-0"]
    down = diagnose_node(
        unreported, expected_gpus=8, rdma=FABRIC, resource_slices=[nic_slice(states | {"mlx5_6": "down"})]
    )
    assert_rdma_broken(down)
    assert down.summary == "RDMA NIC mlx5_6 (rail 6) link down (dra.net/state=down)"
    elsewhere = diagnose_node(unreported, expected_gpus=8, rdma=FABRIC, resource_slices=[nic_slice(states, "other")])
    assert elsewhere.summary.startswith("none of the 8 RDMA NICs is reported")


def test_the_rdma_layer_is_not_checked_when_a_gpu_layer_is_broken():
    broken = rdma_node({"mlx5_0": None})
    broken["spec"]["unschedulable"] = True
    diagnosis = diagnose_node(broken, expected_gpus=8, rdma=FABRIC)
    assert diagnosis.layer == "allocatable"
    assert (diagnosis.checks[-1].layer, diagnosis.checks[-1].status) == (RDMA_LAYER, NOT_CHECKED)


@given(st.lists(st.sampled_from(["ok", "down", "missing", "degraded", "pcie"]), min_size=8, max_size=8))
def test_the_faulty_nics_are_exactly_the_ones_named(fates: list[str]) -> None:
    readings = {
        "ok": port(),
        "down": port(state="1: DOWN", phys_state="3: Disabled"),
        "missing": None,
        "degraded": port(rate="200 Gb/sec (2X NDR)"),
        "pcie": port(pcie=(8, 16)),
    }
    ports = {f"mlx5_{i}": readings[fate] for i, fate in enumerate(fates)}
    diagnosis = diagnose_node(rdma_node(ports), expected_gpus=8, rdma=FABRIC)
    faulty = {f"mlx5_{i}" for i, fate in enumerate(fates) if fate != "ok"}
    assert diagnosis.ok == (not faulty)
    found = {r["device"] for r in diagnosis.checks[-1].evidence["rdma"]["nics"] if r["finding"] != "ok"}
    assert found == faulty
    if any(fate != "missing" for fate in fates):  # else: "none of the 8 RDMA NICs is reported" and why
        for device in faulty:
            assert f"{device} (rail {device[-1]})" in diagnosis.summary
