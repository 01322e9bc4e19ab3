"""Every write to the fleet inventory: loading a fleet document and the operators' node state changes.

Each service owns its transaction and audits its change. The rules of the fleet document live in the pure
module ``provisioning.domain.fleet_document``; here they meet the database.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from core.actor import Actor
from core.audit import audit_record
from core.domain.chain import canonical_json
from core.errors import Conflict, Invalid
from core.progress import QUIET, Progress
from provisioning.domain.attestation_evidence import EvidenceError, public_key_check
from provisioning.domain.fleet_document import FleetSpec, NodeSpec, Reason, Registered, check, check_against_fleet
from provisioning.domain.json_source import SourceMap
from provisioning.domain.node_host import KEYS as HOST_KEYS
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.states import HOLDS_DEVICES
from provisioning.fleet_cache import journal_fleet_changed, lock_placement, placement_section
from provisioning.locks import lock_fleet, lock_nodes
from provisioning.models import (
    NODE_TRANSITIONS,
    Gpu,
    GpuClaim,
    GpuModel,
    Hall,
    Node,
    NodeState,
    Region,
    VersionTarget,
)
from provisioning.selectors import VERSION_FIELDS, allocations_on
from provisioning.services.faults import LastCheckpoint, node_failed

# GPU UUIDs are derived from the hostname and index, so reloading a fleet never mints new ones.
GPU_UUID_NAMESPACE = uuid.UUID("6f1d7c2e-3b8a-5e4f-9a0b-1c2d3e4f5a6b")


def gpu_uuid(hostname: str, index: int) -> str:
    return f"GPU-{uuid.uuid5(GPU_UUID_NAMESPACE, f'{hostname}/{index}')}"


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class GpuCounts:
    created: int = 0
    deleted: int = 0
    unchanged: int = 0


@dataclass
class FleetLoadResult:
    gpu_models: Counts = field(default_factory=Counts)
    regions: Counts = field(default_factory=Counts)
    halls: Counts = field(default_factory=Counts)
    nodes: Counts = field(default_factory=Counts)
    gpus: GpuCounts = field(default_factory=GpuCounts)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return asdict(self)


class FleetDocumentInvalid(Invalid):
    """A fleet document refused whole; ``reasons`` name each problem's place (and line, for a file)."""

    def __init__(self, reasons: list[Reason]) -> None:
        errors: dict[str, list[str]] = {}
        for reason in reasons:
            errors.setdefault(reason.where, []).append(reason.message)
        count = f"{len(reasons)} problem{'s' if len(reasons) != 1 else ''}"
        super().__init__("validation_error", f"The fleet document has {count}; nothing was loaded.", errors=errors)
        self.reasons = reasons


# --- GPU models -------------------------------------------------------------------------------------------


def gpu_models_sync() -> Counts:
    """Upsert a ``GpuModel`` row per catalog entry; rows the catalog no longer lists stay (nodes refer to them).

    The catalog is code and changes with it, so the rows follow it at every fleet load rather than being frozen
    into a data migration. Runs inside the caller's transaction; the caller audits (``fleet_load`` records
    the counts in its ``fleet.loaded`` event).
    """
    if not connection.in_atomic_block:
        raise RuntimeError("gpu_models_sync must run inside the transaction of the change that needs it")
    counts = Counts()
    existing = {m.name: m for m in GpuModel.objects.filter(name__in=list(CATALOG))}
    for name, spec in CATALOG.items():
        wanted = {
            "memory_gb": spec.memory_gb,
            "cc_capable": spec.cc_capable,
            "mig_profiles": {profile: str(kind) for profile, kind in spec.mig_profiles.items()},
        }
        row = existing.get(name)
        if row is None:
            GpuModel.objects.create(name=name, **wanted)
            counts.created += 1
        elif _assign(row, wanted):
            row.save(update_fields=list(wanted))
            counts.updated += 1
        else:
            counts.unchanged += 1
    return counts


def _assign(row: Any, wanted: Mapping[str, Any]) -> list[str]:
    """Set the fields that differ; the names of those fields."""
    changed = [name for name, value in wanted.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, wanted[name])
    return changed


# --- fleet load -------------------------------------------------------------------------------------------


@transaction.atomic
def fleet_load(
    *, document: object, actor: Actor, source: SourceMap | None = None, progress: Progress = QUIET
) -> FleetLoadResult:
    """Upsert the fleet a document describes: regions and halls by code, nodes by hostname.

    The whole document is checked first; any problem refuses it whole (``FleetDocumentInvalid``, nothing
    written). ``source`` (from ``json_source.parse_text``) adds line numbers to the reasons. New nodes
    start ``ready`` with GPUs 0..gpu_count-1; a node whose gpu_count shrinks loses its highest-index GPUs.
    Loads never change a node's state, and what the document does not list is left as it is. ``progress``
    counts the nodes upserted.
    """
    spec, reasons = check(document, source)
    if spec is None:
        raise FleetDocumentInvalid(reasons)
    lock_fleet()
    lock_placement()  # before the node rows: node state changes take it first too (tenancy/locks.py)
    reasons = check_against_fleet(spec, _registered(spec), source)
    if reasons:
        raise FleetDocumentInvalid(reasons)

    result = FleetLoadResult(gpu_models=gpu_models_sync())
    updated: dict[str, list[str]] = {"regions": [], "halls": [], "nodes": []}
    regions = {r.code: r for r in Region.objects.filter(code__in=[r.code for r in spec.regions])}
    halls = {h.code: h for h in Hall.objects.filter(code__in=[h.code for _, h in spec.halls()])}
    for region_spec in spec.regions:
        region, change = _upsert(
            Region,
            regions.get(region_spec.code),
            keys={"code": region_spec.code},
            wanted={"name": region_spec.name, "jurisdiction": region_spec.jurisdiction},
        )
        _count(result.regions, updated["regions"], region_spec.code, change)
        for hall_spec in region_spec.halls:
            hall, change = _upsert(
                Hall,
                halls.get(hall_spec.code),
                keys={"code": hall_spec.code},
                wanted={"region": region, "fenced_for": hall_spec.fenced_for},
            )
            _count(result.halls, updated["halls"], hall_spec.code, change)
            halls[hall.code] = hall

    gpu_models = {m.name: m for m in GpuModel.objects.filter(name__in={n.gpu_model for _, n in spec.nodes()})}
    nodes = {n.hostname: n for n in lock_nodes(Node.objects.filter(hostname__in=[n.hostname for _, n in spec.nodes()]))}
    wanted_nodes = list(spec.nodes())
    progress.set_total(len(wanted_nodes))
    for hall_spec, node_spec in progress.track(wanted_nodes):
        node, change = _upsert(
            Node,
            nodes.get(node_spec.hostname),
            keys={"hostname": node_spec.hostname, "state": NodeState.READY},
            wanted=_node_fields(node_spec, halls[hall_spec.code], gpu_models[node_spec.gpu_model]),
        )
        _count(result.nodes, updated["nodes"], node_spec.hostname, change)
        nodes[node.hostname] = node
    progress.finish()
    _gpus_sync(spec, nodes, result.gpus)
    journal_fleet_changed()

    audit_record(
        actor=actor,
        action="fleet.loaded",
        target_type="fleet",
        target_id="fleet",
        data={
            **result.as_dict(),
            "updated": updated,
            "document_sha256": hashlib.sha256(canonical_json(document).encode()).hexdigest(),
        },
    )
    return result


def _registered(spec: FleetSpec) -> Registered:
    hostnames = [n.hostname for _, n in spec.nodes()]
    domains = {n.nvlink_domain for _, n in spec.nodes()}
    others: dict[str, tuple[str, str, str]] = {}
    for domain, hall, model, host in (
        Node.objects.filter(nvlink_domain__in=domains)
        .exclude(hostname__in=hostnames)
        .order_by("pk")
        .values_list("nvlink_domain", "hall__code", "gpu_model__name", "hostname")
    ):
        others.setdefault(domain, (hall, model, host))
    return Registered(
        node_halls=dict(Node.objects.filter(hostname__in=hostnames).values_list("hostname", "hall__code")),
        hall_regions=dict(
            Hall.objects.filter(code__in=[h.code for _, h in spec.halls()]).values_list("code", "region__code")
        ),
        domains=others,
    )


def _node_fields(spec: NodeSpec, hall: Hall, model: GpuModel) -> dict[str, Any]:
    return {
        "hall": hall,
        "gpu_model": model,
        "gpu_count": spec.gpu_count,
        "nvlink_domain": spec.nvlink_domain,
        "cc_capable": spec.cc_capable,
        "cc_mode": spec.cc_mode,
        "cpu_tee": spec.cpu_tee or "",
        "driver_version": spec.driver,
        "cuda_version": spec.cuda,
        "nccl_version": spec.nccl,
        "firmware_version": spec.firmware,
        "rdma": spec.rdma.as_json() if spec.rdma else {},
        "fabric": spec.rdma.fabric if spec.rdma else "",
        **(spec.host.as_json() if spec.host else dict.fromkeys(HOST_KEYS, 0)),
    }


def _upsert(model: Any, row: Any, *, keys: dict[str, Any], wanted: dict[str, Any]) -> tuple[Any, str]:
    """Create the row from ``keys`` and ``wanted``, or update just the ``wanted`` fields that differ (so a load
    never writes a node's state); the row and what happened: created, updated or unchanged."""
    if row is None:
        return model.objects.create(**keys, **wanted), "created"
    changed = _assign(row, wanted)
    if not changed:
        return row, "unchanged"
    row.save(update_fields=changed)
    return row, "updated"


def _count(counts: Counts, updated: list[str], name: str, change: str) -> None:
    setattr(counts, change, getattr(counts, change) + 1)
    if change == "updated":
        updated.append(name)


def _gpus_sync(spec: FleetSpec, nodes: dict[str, Node], counts: GpuCounts) -> None:
    """Each listed node holds exactly GPUs 0..gpu_count-1."""
    wanted = {nodes[n.hostname].pk: n for _, n in spec.nodes()}
    have: dict[int, set[int]] = {pk: set() for pk in wanted}
    for node_id, index in Gpu.objects.filter(node_id__in=list(wanted)).values_list("node_id", "index"):
        have[node_id].add(index)
    new: list[Gpu] = []
    for node_id, node_spec in wanted.items():
        indexes = range(node_spec.gpu_count)
        new += [
            Gpu(node_id=node_id, index=i, uuid=gpu_uuid(node_spec.hostname, i))
            for i in indexes
            if i not in have[node_id]
        ]
        counts.unchanged += len(have[node_id] & set(indexes))
        surplus = have[node_id] - set(indexes)
        if surplus and GpuClaim.objects.filter(gpu__node_id=node_id, gpu__index__in=surplus).exists():
            raise Conflict(
                "gpus_in_use",
                f"Node {node_spec.hostname} cannot shrink to {node_spec.gpu_count} GPUs: a dropped GPU is in use.",
            )
        if surplus:
            counts.deleted += Gpu.objects.filter(node_id=node_id, index__in=surplus).delete()[0]
    Gpu.objects.bulk_create(new)
    counts.created += len(new)


# --- node states ------------------------------------------------------------------------------------------


def _node_transition(
    *, node: Node, action: str, actor: Actor, reason: str, evidence: dict[str, Any] | None = None
) -> Node:
    transition = NODE_TRANSITIONS[action]
    # Inside a placement section: the engine must see the change before its next decision (journal).
    with placement_section() as section:
        while True:
            old, dirty = Node.objects.filter(pk=node.pk).values_list("state", "sanitize_required").get()
            if old not in transition.sources:
                allowed = ", ".join(sorted(transition.sources))
                raise Conflict(
                    "invalid_transition",
                    f"Node {node.hostname} is {old}; {action} applies only to a node that is {allowed}.",
                )
            # A host a bare-metal tenant left is wiped before anyone else gets it, whatever happened between.
            target = NodeState.SANITIZING if transition.target == NodeState.READY and dirty else transition.target
            now = timezone.now()
            # Compare-and-swap: if another change got in since the read, read again and judge afresh.
            if Node.objects.filter(pk=node.pk, state=old).update(state=target, state_changed_at=now):
                break
        node.refresh_from_db()
        section.engine.state.set_node_state(node.pk, node.state)
        section.journal("node", node=node)
        audit_record(
            actor=actor,
            action=f"node.{_PAST[action]}",
            target_type="node",
            target_id=node.pk,
            data={
                "hostname": node.hostname,
                "from": old,
                "to": str(target),
                "reason": reason,
                **({"evidence": evidence} if evidence else {}),
            },
        )
    return node


_PAST = {"drain": "drained", "undrain": "undrained", "quarantine": "quarantined", "fail": "failed"}


def node_drain(*, node: Node, actor: Actor, reason: str = "") -> Node:
    """Stop placing work on a ready node; what runs there may finish."""
    return _node_transition(node=node, action="drain", actor=actor, reason=reason)


def node_undrain(*, node: Node, actor: Actor, reason: str = "") -> Node:
    """Return a draining, maintenance or quarantined node to service (``ready``)."""
    return _node_transition(node=node, action="undrain", actor=actor, reason=reason)


def node_quarantine(*, node: Node, actor: Actor, reason: str = "") -> Node:
    """Take a suspect node out of placement until someone has looked at it."""
    return _node_transition(node=node, action="quarantine", actor=actor, reason=reason)


def node_fail(*, node: Node, actor: Actor, last_checkpoint: LastCheckpoint, reason: str = "") -> Node:
    """Record that a node has failed (from any state but failed); jobs on it restart elsewhere from their
    checkpoint (``last_checkpoint``: the driver's, ``Provisioner.last_checkpoint``), everything else on it fails
    (``node_failed``)."""
    with transaction.atomic():
        node = _node_transition(node=node, action="fail", actor=actor, reason=reason)
        node_failed(node=node, actor=actor, last_checkpoint=last_checkpoint)
    return node


def gpu_xid_inject(*, node: Node, gpu_index: int, xid: int, actor: Actor, reason: str = "") -> Gpu:
    """The simulated fleet: make one of the node's GPUs report ``xid`` as its last XID (0 clears it), as DCGM
    would after the driver logged it; its exporter reports it and the next reconcile acts on it
    (``provisioning.gpu_faults``). Audited ``node.xid_injected``."""
    with transaction.atomic():
        gpu = Gpu.objects.select_for_update(no_key=True).filter(node=node, index=gpu_index).first()
        if gpu is None:
            raise Invalid("no_such_gpu", f"Node {node.hostname} has no GPU {gpu_index}.")
        gpu.simulated_xid = xid or None
        gpu.save(update_fields=["simulated_xid"])
        audit_record(
            actor=actor,
            action="node.xid_injected",
            target_type="node",
            target_id=node.pk,
            data={"gpu_index": gpu_index, "gpu_uuid": gpu.uuid, "xid": xid, "reason": reason},
        )
    return gpu


# A node the cluster reports failing is quarantined from these; a failed or sanitizing one is left as it is (failed:
# already handled; sanitizing: the wipe finishes first, and holds no work).
_FAULT_QUARANTINES = NODE_TRANSITIONS["quarantine"].sources - {NodeState.FAILED}


def node_fault_recover(
    *,
    node: Node,
    cause: str,
    evidence: dict[str, Any],
    fault_at: datetime,
    actor: Actor,
    last_checkpoint: LastCheckpoint,
) -> dict[str, int] | None:
    """The cluster reports the node failing (``provisioning.drivers.kubernetes.health``): quarantine it, audited
    with the
    condition that said so, then recover what ran on it as for a failed node (``node_failed``: jobs restart from
    their checkpoint elsewhere, the rest fails). None when there was nothing to do, so a second look at the same
    fault changes nothing.

    A node that recovers stays quarantined until an operator returns it (``undrain``): the condition clearing
    says the agent stopped seeing the fault, not that the GPU is sound."""
    with transaction.atomic():
        state = Node.objects.filter(pk=node.pk).values_list("state", flat=True).get()
        moved = state in _FAULT_QUARANTINES
        if moved:
            node = _node_transition(
                node=node, action="quarantine", actor=actor, reason=f"fault: {cause}"[:300], evidence=evidence
            )
        holding = allocations_on(node, HOLDS_DEVICES)
        if state == NodeState.FAILED or not holding.exists():
            return {"restarted": 0, "failed": 0} if moved else None
        return node_failed(node=node, actor=actor, last_checkpoint=last_checkpoint, fault_at=fault_at, cause=cause)


def node_attestation_key_set(*, node: Node, public_key: str, actor: Actor, reason: str = "") -> Node:
    """Register (or, with "", remove) the public key a host's attestation agent signs evidence with (base64 of the
    raw 32-byte Ed25519 key). Evidence from the host verifies only against it (``services.attestation``)."""
    if public_key:
        try:
            public_key_check(public_key)
        except (EvidenceError, ValueError) as error:
            raise Invalid("validation_error", f"Not an Ed25519 public key: {error}.", field="public_key") from None
    with transaction.atomic():
        [locked] = lock_nodes(Node.objects.filter(pk=node.pk))
        previous = locked.attestation_key
        Node.objects.filter(pk=node.pk).update(attestation_key=public_key)
        node.attestation_key = public_key
        audit_record(
            actor=actor,
            action="node.attestation_key_set",
            target_type="node",
            target_id=node.pk,
            data={"hostname": node.hostname, "public_key": public_key, "previous": previous, "reason": reason},
        )
    return node


VERSION_TARGET_FIELDS = tuple(f.name for f in VERSION_FIELDS)


def version_target_set(*, gpu_model: str, versions: Mapping[str, str], actor: Actor, reason: str = "") -> VersionTarget:
    """Set the versions every node of one GPU model should run (driver, CUDA, NCCL, firmware), replacing any
    earlier target of that model. Every field is required and exact (a node matches only the same string), and none
    may be "unknown": that is what an unpublished version reads, not something a node can be upgraded to."""
    model = GpuModel.objects.filter(name=gpu_model).first()
    if model is None:
        raise Invalid("validation_error", f"No GPU model {gpu_model!r} in the fleet's catalog.", field="gpu_model")
    wanted: dict[str, str] = {}
    for name in VERSION_TARGET_FIELDS:
        value = str(versions.get(name) or "").strip()
        if not value or len(value) > 32 or value == "unknown":
            raise Invalid(
                "validation_error", f"{name} must be a version of 1 to 32 characters, not {value!r}.", field=name
            )
        wanted[name] = value
    with transaction.atomic():
        previous = VersionTarget.objects.select_for_update(no_key=True).filter(gpu_model=model).first()
        before = {name: getattr(previous, name) for name in VERSION_TARGET_FIELDS} if previous else None
        target, _ = VersionTarget.objects.update_or_create(
            gpu_model=model, defaults={**wanted, "updated_at": timezone.now()}
        )
        audit_record(
            actor=actor,
            action="fleet.target_set",
            target_type="gpu_model",
            target_id=model.pk,
            data={"gpu_model": model.name, "versions": wanted, "previous": before, "reason": reason},
        )
    return target
