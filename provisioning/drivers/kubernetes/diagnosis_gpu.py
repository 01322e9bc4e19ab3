"""The GPU layers of node diagnosis (``diagnosis.py``): the node, then NVIDIA's stack bottom-up, each read from
the Node object alone and compared with what the fleet inventory expects. Pure: no Django, no I/O.

Layers, in order, with the evidence each one relies on and why:

``node``
    The ``Ready`` condition. A NotReady kubelet publishes nothing else we can trust.
``driver``
    ``nvidia.com/gpu.present`` (set by the GPU operator on nodes where node feature discovery saw an NVIDIA PCI
    device, ``feature.node.kubernetes.io/pci-10de.present``), ``nvidia.com/gpu.deploy.operands`` (``false``
    switches the whole operator off for the node), ``nvidia.com/gpu.deploy.driver`` (``true``, or
    ``pre-installed`` when the host brings its own driver), ``nvidia.com/gpu-driver-upgrade-state`` (the
    operator's driver-upgrade state machine; ``upgrade-failed`` or a step in flight takes the GPUs away), and the
    driver version that GPU feature discovery (GFD) reads through NVML: ``nvidia.com/cuda.driver-version.*``
    (current GFD), ``nvidia.com/cuda.driver.major`` (deprecated GFD name, still written) or
    ``nvidia.com/gpu.driver.major`` (written by some labellers other than GFD). GFD writes these only when the
    kernel driver is loaded and answers, so they are the only driver evidence a Node carries; their absence can
    also mean GFD itself is not running (``nvidia.com/gpu.deploy.gpu-feature-discovery`` is in the evidence).
    ``nvidia.com/gpu.count`` is how many GPUs NVML enumerates; fewer than the inventory means GPUs fell off the
    bus. On confidential-computing hosts ``nvidia.com/cc.mode`` (wanted) must match ``nvidia.com/cc.mode.state``
    and ``nvidia.com/cc.ready.state`` must not be ``false``. On passthrough hosts
    (``nvidia.com/gpu.workload.config=vm-passthrough``) the "driver" is vfio-pci, deployed by the vfio-manager
    (``nvidia.com/gpu.deploy.vfio-manager``), and GFD does not run.
``toolkit``
    ``nvidia.com/gpu.deploy.container-toolkit``: ``true``/``pre-installed`` deployed, ``false`` disabled,
    ``paused-*`` stopped by the operator, absent: no evidence at all. The operator's validator reports its
    toolkit check through its own pod and host files, not through the Node, so a deployed-but-broken toolkit
    shows up here only indirectly (GFD, which runs under the NVIDIA runtime, stops refreshing labels).
    Not applicable to passthrough hosts.
``device_plugin``
    ``nvidia.com/mig.config.state`` first (``pending``/``rebooting``: the MIG manager is re-cutting the GPUs and
    has paused the plugin; ``failed``: it gave up), then ``nvidia.com/gpu.deploy.device-plugin``
    (``paused-for-mig-change`` while the MIG manager works), ``nvidia.com/mig.strategy`` (Ladder needs
    ``mixed``), then ``status.capacity``: ``nvidia.com/gpu`` (divided by ``nvidia.com/gpu.replicas`` when
    time-slicing replicates devices; ``nvidia.com/gpu.shared`` under ``renameByDefault``) against
    ``nvidia.com/gpu.count`` and the inventory, and each ``nvidia.com/mig-<profile>`` against ``expected_mig``.
    Under the mixed strategy a GPU in MIG mode leaves ``nvidia.com/gpu``, so the whole-GPU capacity is
    ``expected_gpus`` less the GPUs in MIG mode. Passthrough hosts: ``nvidia.com/gpu.deploy.sandbox-device-plugin``
    and the passthrough resources (``nvidia.com/<device name>`` or ``nvidia.com/pgpu``).
    Nodes served by the NVIDIA DRA driver instead (the ResourceSlices of driver ``gpu.nvidia.com`` for the node,
    which the caller passes) are read from those slices: devices of type ``gpu`` or ``vfio`` are whole GPUs,
    devices of type ``mig`` count per ``profile``; the device plugin is expected to be off there, and a node that
    still advertises ``nvidia.com/gpu`` while the driver publishes its GPUs is a fault (each could hand the same
    GPU out). Ladder's claims need the DRA driver (docs/kubernetes.md §2, "Device plugin nodes").
``allocatable``
    ``status.allocatable`` below capacity (the device plugin marks devices unhealthy, e.g. after an Xid error,
    and the kubelet removes them from allocatable only), ``spec.unschedulable`` (cordoned), and NoSchedule or
    NoExecute taints that Ladder's pods do not tolerate. A ``ladder.io/dedicated`` taint fences the node for one
    tenant on purpose: it is reported as information, never as the fault. On a DRA node, a device tainted
    NoSchedule or NoExecute (the driver's health check) is not allocatable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from provisioning.drivers.kubernetes.node_reading import (
    DRA_DRIVER,
    GPU,
    GPU_SHARED,
    L_CC_MODE,
    L_CC_READY,
    L_CC_STATE,
    L_COUNT,
    L_DEPLOY_DRIVER,
    L_DEPLOY_GFD,
    L_DEPLOY_PLUGIN,
    L_DEPLOY_SANDBOX_PLUGIN,
    L_DEPLOY_TOOLKIT,
    L_DEPLOY_VFIO,
    L_DRIVER_FULL,
    L_DRIVER_MAJOR,
    L_DRIVER_MAJOR_ALT,
    L_DRIVER_MAJOR_OLD,
    L_MIG_CONFIG,
    L_MIG_STATE,
    L_MIG_STRATEGY,
    L_NFD_PCI,
    L_OPERANDS,
    L_PRESENT,
    L_PRODUCT,
    L_REPLICAS,
    L_UPGRADE_STATE,
    L_WORKLOAD,
    MIG_PREFIX,
    Finding,
    NodeReading,
    as_int,
    device_attribute,
    shown,
)
from provisioning.drivers.kubernetes.shapes import TAINT_DEDICATED

DRIVER_VERSION_LABELS = (L_DRIVER_FULL, L_DRIVER_MAJOR, L_DRIVER_MAJOR_OLD, L_DRIVER_MAJOR_ALT)
DEPLOYED = frozenset({"true", "pre-installed"})
# Steps of the GPU operator's driver-upgrade state machine during which the driver pod is being replaced and the
# node drained; "upgrade-required" (waiting its turn) and "upgrade-done" leave the GPUs in service.
UPGRADE_IN_FLIGHT = frozenset(
    {
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "reboot-required",
        "reboot-validation-required",
        "reboot-post-required",
        "validation-required",
        "uncordon-required",
    }
)
MIG_IN_PROGRESS = frozenset({"pending", "rebooting"})
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def check_node(n: NodeReading) -> Finding:
    ready = next((c for c in n.conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return Finding(False, "node not ready: the kubelet has reported no Ready condition", {"ready": None})
    evidence = {"ready": {key: ready.get(key) for key in ("status", "reason", "message")}}
    if ready.get("status") != "True":
        reason = ready.get("reason") or "no reason given"
        message = ready.get("message") or ""
        detail = f"node not ready (Ready={ready.get('status')}): {reason}" + (f": {message}" if message else "")
        return Finding(False, detail, evidence)
    return Finding(True, "node is Ready", evidence)


def check_driver(n: NodeReading, expected_gpus: int) -> Finding:
    workload = n.label(L_WORKLOAD)
    evidence: dict[str, Any] = n.pick(
        L_PRESENT, L_NFD_PCI, L_OPERANDS, L_WORKLOAD, L_DEPLOY_DRIVER, L_DEPLOY_GFD, L_UPGRADE_STATE
    )
    if workload == "vm-vgpu":
        return Finding(False, f"node is set up for vGPU ({L_WORKLOAD}=vm-vgpu), which Ladder does not use", evidence)
    if n.label(L_PRESENT) != "true":
        if n.label(L_NFD_PCI) == "true":
            detail = f"the GPU operator has not taken this node: NFD sees an NVIDIA PCI device but {L_PRESENT} is unset"
        else:
            detail = f"no NVIDIA GPU seen on this node: neither {L_PRESENT} nor {L_NFD_PCI} is true"
        return Finding(False, detail, evidence)
    if n.label(L_OPERANDS) == "false":
        return Finding(False, f"GPU operator operands are switched off for this node ({L_OPERANDS}=false)", evidence)
    upgrade = n.label(L_UPGRADE_STATE)
    if upgrade == "upgrade-failed":
        return Finding(False, f"driver upgrade failed ({L_UPGRADE_STATE}=upgrade-failed)", evidence)
    if upgrade in UPGRADE_IN_FLIGHT:
        return Finding(False, f"driver upgrade in progress ({L_UPGRADE_STATE}={upgrade})", evidence)
    if n.passthrough:
        evidence.update(n.pick(L_DEPLOY_VFIO))
        vfio = n.label(L_DEPLOY_VFIO)
        if vfio != "true":
            return Finding(False, f"passthrough node without vfio-pci binding: {L_DEPLOY_VFIO}={shown(vfio)}", evidence)
        cc = _check_cc(n, evidence)
        return cc or Finding(True, "passthrough node: GPUs are bound to vfio-pci by the vfio-manager", evidence)

    evidence.update(n.pick(*DRIVER_VERSION_LABELS, L_COUNT, L_PRODUCT))
    version = _driver_version(n)
    if version is None:
        deploy = n.label(L_DEPLOY_DRIVER)
        why = {
            None: f"{L_DEPLOY_DRIVER} is unset",
            "false": f"the operator does not deploy a driver here ({L_DEPLOY_DRIVER}=false) and none reports",
            "pre-installed": "the host's pre-installed driver does not answer",
        }.get(deploy, f"{L_DEPLOY_DRIVER}={deploy}")
        gfd = n.label(L_DEPLOY_GFD)
        if gfd not in DEPLOYED:
            why += f"; GPU feature discovery is not deployed ({L_DEPLOY_GFD}={shown(gfd)}), so nothing reports it"
        return Finding(False, f"no NVIDIA driver reported: no driver version labels; {why}", evidence)
    count = as_int(n.label(L_COUNT))
    single_mig = n.label(L_MIG_STRATEGY) == "single" and "-MIG-" in (n.label(L_PRODUCT) or "")
    if count is not None and not single_mig and count != expected_gpus:
        if count < expected_gpus:
            detail = f"driver {version} sees {count} of {expected_gpus} GPUs ({L_COUNT}={count})"
        else:
            detail = f"driver {version} reports {count} GPUs but the inventory expects {expected_gpus}"
        return Finding(False, detail, evidence | {"expected_gpus": expected_gpus})
    cc = _check_cc(n, evidence)
    return cc or Finding(True, f"driver {version} loaded, {shown(count)} GPUs enumerated", evidence)


def _check_cc(n: NodeReading, evidence: dict[str, Any]) -> Finding | None:
    wanted, state, ready = n.label(L_CC_MODE), n.label(L_CC_STATE), n.label(L_CC_READY)
    if wanted is None and state is None and ready is None:
        return None
    evidence.update(n.pick(L_CC_MODE, L_CC_STATE, L_CC_READY))
    if wanted is not None and state is not None and state != wanted:
        return Finding(False, f"confidential-computing mode not applied: wanted {wanted}, state {state}", evidence)
    if ready == "false":
        return Finding(False, f"confidential-computing mode not ready ({L_CC_READY}=false)", evidence)
    return None


def check_toolkit(n: NodeReading) -> Finding:
    if n.passthrough:
        return Finding(True, "not applicable: passthrough node, GPUs go whole to VMs", n.pick(L_WORKLOAD))
    value = n.label(L_DEPLOY_TOOLKIT)
    evidence: dict[str, Any] = n.pick(L_DEPLOY_TOOLKIT)
    runtime = n.status.get("nodeInfo") or n.status.get("node_info") or {}
    runtime_version = runtime.get("containerRuntimeVersion") or runtime.get("container_runtime_version")
    if runtime_version:
        evidence["containerRuntimeVersion"] = runtime_version
    if value in DEPLOYED:
        return Finding(True, f"container toolkit deployed ({L_DEPLOY_TOOLKIT}={value})", evidence)
    return Finding(False, _deploy_problem("container toolkit", L_DEPLOY_TOOLKIT, value), evidence)


def check_device_plugin(
    n: NodeReading, expected_gpus: int, mig: Mapping[str, int], expected_mig_gpus: int | None
) -> Finding:
    if n.dra:
        return _check_dra_driver(n, expected_gpus, mig, expected_mig_gpus)
    if n.passthrough:
        return _check_sandbox_plugin(n, expected_gpus)
    evidence: dict[str, Any] = n.pick(
        L_DEPLOY_PLUGIN, L_MIG_STRATEGY, L_MIG_CONFIG, L_MIG_STATE, L_COUNT, L_REPLICAS, L_PRODUCT
    )
    state, config = n.label(L_MIG_STATE), n.label(L_MIG_CONFIG)
    if state in MIG_IN_PROGRESS:
        return Finding(False, f"MIG reconfiguration in progress: {L_MIG_STATE}={state} (target {config})", evidence)
    if state == "failed":
        return Finding(False, f"MIG reconfiguration failed: {L_MIG_STATE}=failed (target {config})", evidence)
    deploy = n.label(L_DEPLOY_PLUGIN)
    if deploy not in DEPLOYED:
        return Finding(False, _deploy_problem("device plugin", L_DEPLOY_PLUGIN, deploy), evidence)
    if n.label(L_MIG_STRATEGY) == "single" and "-MIG-" in (n.label(L_PRODUCT) or ""):
        return Finding(
            False,
            f"device plugin runs the MIG strategy single ({L_PRODUCT}={n.label(L_PRODUCT)}); Ladder needs mixed",
            evidence,
        )

    capacity = _gpu_resources(n.capacity)
    evidence["capacity"] = capacity
    evidence["expected_gpus"] = expected_gpus
    if mig:
        evidence["expected_mig"] = dict(mig)
    replicas = max(as_int(n.label(L_REPLICAS)) or 1, 1)
    whole = (capacity.get(GPU, 0) + capacity.get(GPU_SHARED, 0)) // replicas
    advertised_mig = {key[len(MIG_PREFIX) :]: value for key, value in capacity.items() if key.startswith(MIG_PREFIX)}

    for profile in sorted(set(mig) | set(advertised_mig)):
        want, have = mig.get(profile, 0), advertised_mig.get(profile, 0)
        if want != have:
            if want == 0:
                detail = f"device plugin advertises {have} {MIG_PREFIX}{profile} the inventory does not expect"
            else:
                detail = f"device plugin advertises {have} of {want} expected {MIG_PREFIX}{profile}"
            return Finding(False, detail, evidence)
    low, high = _whole_gpu_range(expected_gpus, mig, expected_mig_gpus)
    if not low <= whole <= high:
        wanted = str(low) if low == high else f"{low}-{high}"
        resource = GPU_SHARED if capacity.get(GPU_SHARED) else GPU
        detail = f"device plugin advertises {whole} of {wanted} expected whole GPUs ({resource})"
        count = as_int(n.label(L_COUNT))
        if count is not None:
            detail += f" while {L_COUNT}={count}"
        if replicas > 1:
            detail += f", {replicas} replicas each"
        return Finding(False, detail, evidence)
    evidence["offered"] = _gpu_phrase(whole, advertised_mig, n.label(L_PRODUCT) or "GPU")
    return Finding(True, f"device plugin advertises {evidence['offered']}", evidence)


def _check_dra_driver(
    n: NodeReading, expected_gpus: int, mig: Mapping[str, int], expected_mig_gpus: int | None
) -> Finding:
    """The NVIDIA DRA driver's devices for the node, against the inventory; the device plugin must be off."""
    kinds: dict[str, int] = {}
    published_mig: dict[str, int] = {}
    for device in n.dra_devices:
        kind = str(device_attribute(device, "type") or "unknown")
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "mig":
            profile = str(device_attribute(device, "profile"))
            published_mig[profile] = published_mig.get(profile, 0) + 1
    whole = kinds.get("gpu", 0) + kinds.get("vfio", 0)
    evidence: dict[str, Any] = {"served_by": "dra", "dra_devices": kinds, "expected_gpus": expected_gpus}
    evidence |= n.pick(L_DEPLOY_PLUGIN, L_MIG_CONFIG, L_MIG_STATE, L_PRODUCT)
    if mig:
        evidence["expected_mig"] = dict(mig)
    plugin = {
        k: v
        for k, v in _gpu_resources(n.capacity).items()
        if v and (k in (GPU, GPU_SHARED) or k.startswith(MIG_PREFIX))
    }
    if plugin:
        evidence["capacity"] = plugin
        return Finding(
            False,
            f"both the device plugin ({', '.join(sorted(plugin))}) and the DRA driver {DRA_DRIVER} offer this node's"
            " GPUs, so one GPU can be handed out twice: turn the device plugin off here",
            evidence,
        )
    state, config = n.label(L_MIG_STATE), n.label(L_MIG_CONFIG)
    if state in MIG_IN_PROGRESS:
        return Finding(False, f"MIG reconfiguration in progress: {L_MIG_STATE}={state} (target {config})", evidence)
    if state == "failed":
        return Finding(False, f"MIG reconfiguration failed: {L_MIG_STATE}=failed (target {config})", evidence)
    for profile in sorted(set(mig) | set(published_mig)):
        want, have = mig.get(profile, 0), published_mig.get(profile, 0)
        if want != have:
            return Finding(False, f"DRA driver publishes {have} of {want} expected MIG devices {profile}", evidence)
    low, high = _whole_gpu_range(expected_gpus, mig, expected_mig_gpus)
    if not low <= whole <= high:
        wanted = str(low) if low == high else f"{low}-{high}"
        return Finding(False, f"DRA driver publishes {whole} of {wanted} expected whole GPUs", evidence)
    evidence["offered"] = _gpu_phrase(whole, published_mig, n.label(L_PRODUCT) or "GPU") + f" (DRA {DRA_DRIVER})"
    return Finding(True, f"DRA driver publishes {evidence['offered']}", evidence)


def _check_sandbox_plugin(n: NodeReading, expected_gpus: int) -> Finding:
    evidence: dict[str, Any] = n.pick(L_DEPLOY_SANDBOX_PLUGIN)
    deploy = n.label(L_DEPLOY_SANDBOX_PLUGIN)
    if deploy != "true":
        return Finding(False, _deploy_problem("sandbox device plugin", L_DEPLOY_SANDBOX_PLUGIN, deploy), evidence)
    capacity = _gpu_resources(n.capacity)
    passthrough = {key: value for key, value in capacity.items() if _is_passthrough_resource(key)}
    evidence["capacity"] = capacity
    evidence["expected_gpus"] = expected_gpus
    total = sum(passthrough.values())
    if total != expected_gpus:
        return Finding(False, f"sandbox device plugin advertises {total} of {expected_gpus} passthrough GPUs", evidence)
    evidence["offered"] = ", ".join(f"{value} x {key}" for key, value in sorted(passthrough.items()))
    return Finding(True, f"sandbox device plugin advertises {evidence['offered']}", evidence)


def check_allocatable(n: NodeReading, tolerations: Sequence[Mapping[str, Any]]) -> Finding:
    capacity = _gpu_resources(n.capacity)
    allocatable = _gpu_resources(n.allocatable)
    evidence: dict[str, Any] = {"allocatable": allocatable, "unschedulable": bool(n.spec.get("unschedulable"))}
    tainted = [
        str(device.get("name"))
        for device in n.dra_devices
        if any(t.get("effect") in BLOCKING_EFFECTS for t in device.get("taints") or [])
    ]
    if tainted:
        evidence["tainted_devices"] = tainted
        detail = f"{len(tainted)} of {len(n.dra_devices)} DRA devices are tainted (unhealthy): {', '.join(tainted)}"
        return Finding(False, detail, evidence)
    for resource, have in sorted(capacity.items()):
        usable = allocatable.get(resource, 0)
        if usable < have:
            evidence["capacity"] = capacity
            detail = f"{usable} of {have} {resource} allocatable: the device plugin reports {have - usable} unhealthy"
            return Finding(False, detail, evidence)
    taints = [_taint(t) for t in n.taints]
    evidence["taints"] = taints
    if n.spec.get("unschedulable"):
        return Finding(False, "node is cordoned (spec.unschedulable=true)", evidence)
    notes: list[str] = []
    for taint in taints:
        if taint["effect"] not in BLOCKING_EFFECTS:
            continue
        if taint["key"] == TAINT_DEDICATED:
            evidence["dedicated"] = taint["value"]
            notes.append(f"dedicated to tenant {taint['value']} ({TAINT_DEDICATED} taint, expected)")
            continue
        if taint["key"] == "node.kubernetes.io/unschedulable":
            return Finding(False, f"node is cordoned ({_taint_text(taint)})", evidence)
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return Finding(False, f"taint {_taint_text(taint)} is not tolerated by Ladder's pods", evidence)
    total = len(n.dra_devices) if n.dra else sum(allocatable.values())
    detail = f"{total} GPU devices allocatable, schedulable"
    if notes:
        detail += "; " + "; ".join(notes)
    return Finding(True, detail, evidence)


def _driver_version(n: NodeReading) -> str | None:
    for key in DRIVER_VERSION_LABELS:
        value = n.label(key)
        if value:
            return value
    return None


def _deploy_problem(what: str, key: str, value: str | None) -> str:
    if value is None:
        return f"no {what} evidence: {key} is unset"
    if value == "false":
        return f"{what} is disabled on this node ({key}=false)"
    if value.startswith("paused"):
        return f"{what} is paused by the GPU operator ({key}={value})"
    return f"{what} not deployed ({key}={value})"


def _is_passthrough_resource(key: str) -> bool:
    return key.startswith("nvidia.com/") and key not in (GPU, GPU_SHARED) and not key.startswith(MIG_PREFIX)


def _gpu_resources(resources: Mapping[str, Any]) -> dict[str, int]:
    """The NVIDIA extended resources of a capacity or allocatable map, as integers (unparseable counts as 0)."""
    return {key: as_int(value) or 0 for key, value in resources.items() if key.startswith("nvidia.com/")}


_SLICES = re.compile(r"^(\d+)g\.")


def _whole_gpu_range(expected_gpus: int, mig: Mapping[str, int], mig_gpus: int | None) -> tuple[int, int]:
    """How many whole GPUs the mixed strategy should advertise: the GPUs not in MIG mode.

    With the number of MIG-mode GPUs unknown it lies between "every MIG device on its own GPU" and "the MIG
    devices packed 7 compute slices to a GPU".
    """
    if not mig:
        return expected_gpus, expected_gpus
    if mig_gpus is not None:
        return expected_gpus - mig_gpus, expected_gpus - mig_gpus
    devices = sum(mig.values())
    slices = 0
    for profile, count in mig.items():
        match = _SLICES.match(profile)
        slices += (int(match.group(1)) if match else 1) * count
    fewest_parents = -(-slices // 7)
    return max(expected_gpus - devices, 0), max(expected_gpus - fewest_parents, 0)


def _gpu_phrase(whole: int, mig: Mapping[str, int], product: str) -> str:
    parts = [f"{whole} x {product}"] if whole or not mig else []
    parts += [f"{count} x mig-{profile}" for profile, count in sorted(mig.items()) if count]
    return ", ".join(parts)


def _taint(taint: Mapping[str, Any]) -> dict[str, Any]:
    return {"key": taint.get("key"), "value": taint.get("value"), "effect": taint.get("effect")}


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' matching rule: effect (empty means all), key (empty with Exists means all), then value."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key")
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")
