"""Attestation of confidential VMs and the release of their secrets (the key broker): a confidential allocation
becomes ``running`` only once fresh evidence from its host's TEE was verified, and its workload's secrets go to the
guest only after that, sealed to a key the guest made inside its TEE. The protocol, step by step with the threat
each step answers, is in docs/kubernetes.md ("Confidential VMs: attestation and the key broker").

1. ``attestation_challenge``: a fresh nonce for the allocation (random, stored, expiring, single use).
2. ``attestation_submit``: the guest's evidence, bound to that nonce and signed by the host's attestation key (the
   verifier ``LADDER_ATTESTATION_VERIFIER`` checks the format and signature and returns its claims); Ladder then
   checks what every verifier's claims must say: the nonce it issued, the host's declared TEE, the GPU in CC mode.
   Every verdict is recorded and audited (``allocation.attested``).
3. ``attestation_release``: once per verified verdict, the workload's secret values and dataset links, sealed to
   the ``tee_pubkey`` the evidence named (audited ``allocation.secrets_released``, names only).

The guest proves who it asks for with ``attestation_credential``: derived per allocation, rendered into the pod.
It only lets a caller ask for nonces and send evidence; nothing is released on it alone.

The verifier is a hook: ``node-key`` (built in) verifies the ``ladder-node-key`` format against the Ed25519 key an
operator registered for the node (``node_attestation_key_set``); a deployment plugs in its attestation service
(an EAT/JWT verifier for NVIDIA NRAS or Intel Trust Authority, an SEV-SNP report verifier) by dotted path to a
class with ``name`` and ``verify(allocation=, evidence=) -> Verdict`` whose claims carry ``eat_nonce``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from core.actor import Actor
from core.audit import audit_record
from core.errors import Conflict, Invalid
from provisioning.domain.attestation_evidence import EvidenceError, seal, verified_claims
from provisioning.domain.rungs import rungs_where
from provisioning.domain.states import AllocationState
from provisioning.domain.workloads import Workload
from provisioning.models import Allocation, Attestation, AttestationChallenge, AttestationOutcome, Node
from provisioning.services.transitions import allocation_transition
from provisioning.services.workloads import workload_materials

Outcome = AttestationOutcome
S = AllocationState
# A guest may hold a few nonces at once (a retry while an answer is lost); more is someone flooding the table.
MAX_OPEN_CHALLENGES = 8
TEES = ("snp", "tdx")


@dataclass(frozen=True)
class Verdict:
    verified: bool
    detail: str = ""
    claims: dict[str, Any] = field(default_factory=dict)
    outcome: str = ""  # for a refusal: forged | stale | refused | unverifiable (default: forged)


class AttestationVerifier(Protocol):
    name: str

    def verify(self, *, allocation: Allocation, evidence: dict[str, Any]) -> Verdict: ...


def allocation_host(allocation: Allocation) -> Node | None:
    """The confidential host the allocation was placed on (a confidential VM is on one host)."""
    return Node.objects.filter(gpus__allocation_devices__allocation=allocation).distinct().order_by("pk").first()


class NodeKeyVerifier:
    """The built-in format: claims signed by the host's attestation key, registered by an operator for the node.
    Evidence for another allocation or host, or signed by any other key, is forged."""

    name = "node-key"

    def verify(self, *, allocation: Allocation, evidence: dict[str, Any]) -> Verdict:
        host = allocation_host(allocation)
        if host is None:
            return Verdict(False, "the allocation holds no host", outcome=Outcome.UNVERIFIABLE)
        if not host.attestation_key:
            return Verdict(
                False, f"no attestation key is registered for host {host.hostname}", outcome=Outcome.UNVERIFIABLE
            )
        try:
            claims = verified_claims(evidence, host.attestation_key)
        except EvidenceError as error:
            return Verdict(False, str(error), outcome=Outcome.FORGED)
        if claims.get("allocation") != allocation.pk:
            return Verdict(
                False, f"the evidence is for allocation {claims.get('allocation')!r}", outcome=Outcome.FORGED
            )
        if claims.get("host") != host.hostname:
            return Verdict(False, f"the evidence is for host {claims.get('host')!r}", outcome=Outcome.FORGED)
        return Verdict(True, f"signed by {host.hostname}'s registered attestation key", claims=claims)


def verifier() -> AttestationVerifier:
    path = settings.LADDER_ATTESTATION_VERIFIER
    found: AttestationVerifier = NodeKeyVerifier() if path == "node-key" else import_string(path)()
    return found


# --- the guest's credential ----------------------------------------------------------------------------------


def _credential_key() -> bytes:
    return hashlib.sha256(b"ladder attestation credential\x00" + settings.SECRET_KEY.encode()).digest()


def attestation_credential(allocation_id: int) -> str:
    """The credential rendered into a confidential VM's pod: it lets the guest ask for nonces and send evidence
    for this allocation, and nothing else. Derived (not stored), so re-rendering the pod gives the same one."""
    digest = hmac.new(_credential_key(), f"allocation:{allocation_id}".encode(), hashlib.sha256).digest()
    return "lat_" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def attestation_guest(*, allocation_id: int, credential: str) -> Allocation | None:
    """The confidential allocation the credential is for, while it runs or is on its way (None otherwise: the
    caller answers the same 401 for an unknown allocation and a wrong credential, so neither is revealed)."""
    if not hmac.compare_digest(credential.encode(), attestation_credential(allocation_id).encode()):
        return None
    return (
        Allocation.objects.select_related("tenant")
        .filter(pk=allocation_id, rung__in=rungs_where(lambda f: f.attested), state__in=(S.PROVISIONING, S.RUNNING))
        .first()
    )


# --- 1. the nonce ----------------------------------------------------------------------------------------------


def attestation_challenge(*, allocation: Allocation, now: datetime | None = None) -> AttestationChallenge:
    """A fresh nonce the guest's next evidence must carry. Not audited: it changes nothing but this bookkeeping
    row, and the verdict that uses it is."""
    now = now or timezone.now()
    open_ = AttestationChallenge.objects.filter(allocation=allocation, used_at=None, expires_at__gt=now)
    if open_.count() >= MAX_OPEN_CHALLENGES:
        raise Conflict("too_many_challenges", "Use or let expire the nonces already issued before asking again.")
    return AttestationChallenge.objects.create(
        allocation=allocation,
        nonce=secrets.token_urlsafe(32),
        issued_at=now,
        expires_at=now + timedelta(seconds=settings.LADDER_ATTESTATION_NONCE_SECONDS),
    )


def _nonce_take(allocation: Allocation, nonce: object, now: datetime) -> str | None:
    """Use the nonce (compare-and-swap, so two submissions of one nonce cannot both pass); why not, or None."""
    if not isinstance(nonce, str) or not nonce:
        return "the evidence carries no eat_nonce"
    found = AttestationChallenge.objects.filter(allocation=allocation, nonce=nonce).first()
    if found is None:
        return "the nonce was not issued to this allocation"
    if found.used_at is not None:
        return "the nonce was already used"
    if found.expires_at <= now:
        return "the nonce has expired"
    if not AttestationChallenge.objects.filter(pk=found.pk, used_at=None).update(used_at=now):
        return "the nonce was already used"
    return None


# --- 2. the verdict --------------------------------------------------------------------------------------------


def _judge(allocation: Allocation, verdict: Verdict, now: datetime) -> tuple[str, str]:
    """Ladder's own checks on the claims of evidence the verifier accepted: (outcome, detail)."""
    claims = verdict.claims
    why = _nonce_take(allocation, claims.get("eat_nonce"), now)
    if why is not None:
        return Outcome.STALE, why
    host = allocation_host(allocation)
    declared = host.cpu_tee if host is not None else ""
    if claims.get("tee") not in TEES or claims.get("tee") != declared:
        return (
            Outcome.REFUSED,
            f"the evidence claims TEE {claims.get('tee')!r}; the host is declared {declared or 'unknown'}",
        )
    if claims.get("gpu_cc_mode") != "on":
        return Outcome.REFUSED, "the GPU is not in confidential-computing mode"
    return Outcome.VERIFIED, verdict.detail


def attestation_submit(
    *, allocation: Allocation, evidence: object, actor: Actor, now: datetime | None = None
) -> Attestation:
    """Judge the guest's evidence and record the verdict (audited). Evidence that is not the host's (forged) or
    not fresh (stale) is refused and changes nothing else: the guest may try again with a new nonce. Authentic
    evidence that the VM is not confidential (refused), or a host nothing can be verified for (unverifiable),
    fails an allocation still on its way."""
    now = now or timezone.now()
    judge = verifier()
    shown = evidence if isinstance(evidence, dict) else {"unreadable": str(evidence)[:200]}
    verdict = judge.verify(allocation=allocation, evidence=shown)  # a real verifier is remote: no transaction
    with transaction.atomic():
        if verdict.verified:
            outcome, detail = _judge(allocation, verdict, now)
        else:
            outcome, detail = (verdict.outcome or Outcome.FORGED), verdict.detail
        record = _record(allocation, judge.name, outcome, detail, shown, verdict.claims, actor, now)
        if outcome in (Outcome.REFUSED, Outcome.UNVERIFIABLE) and allocation.state == S.PROVISIONING:
            allocation_transition(allocation=allocation, to=S.FAILED, actor=actor, reason=f"attestation: {detail}")
    return record


def attestation_refuse(*, allocation: Allocation, evidence: dict[str, Any], detail: str, actor: Actor) -> Attestation:
    """Record evidence refused before any verifier saw it (audited): what came by a way that proves nothing, such as
    a pod annotation anyone who may edit the pod can write."""
    with transaction.atomic():
        return _record(allocation, "ladder", Outcome.FORGED, detail, evidence, {}, actor, timezone.now())


def _record(
    allocation: Allocation,
    verifier_name: str,
    outcome: str,
    detail: str,
    evidence: dict[str, Any],
    claims: dict[str, Any],
    actor: Actor,
    now: datetime,
) -> Attestation:
    verified = outcome == Outcome.VERIFIED
    nonce = claims.get("eat_nonce")
    record = Attestation.objects.create(
        allocation=allocation,
        verifier=verifier_name,
        verified=verified,
        outcome=outcome,
        evidence=evidence,
        detail=detail[:500],
        nonce=nonce[:64] if isinstance(nonce, str) else "",
        recorded_at=now,
    )
    audit_record(
        actor=actor,
        action="allocation.attested",
        target_type="allocation",
        target_id=allocation.pk,
        tenant=allocation.tenant,
        data={"verified": verified, "outcome": outcome, "verifier": verifier_name, "detail": detail[:500]},
    )
    return record


def attested(allocation: Allocation) -> bool:
    """Whether a verdict on this allocation was ever verified (refusals after it change nothing: they may be
    anyone's, and the guest that was verified holds its secrets already)."""
    return allocation.attestations.filter(verified=True).exists()


def attestation_overdue(allocation: Allocation, now: datetime) -> bool:
    """A confidential VM still waiting for a verified verdict after ``LADDER_ATTESTATION_DEADLINE_SECONDS``."""
    waited = (now - allocation.state_changed_at).total_seconds()
    return (
        allocation.state == S.PROVISIONING
        and waited >= settings.LADDER_ATTESTATION_DEADLINE_SECONDS
        and not attested(allocation)
    )


# --- 3. the release ----------------------------------------------------------------------------------------------


def attestation_release(*, attestation: Attestation, actor: Actor, now: datetime | None = None) -> dict[str, str]:
    """The workload's secret values and dataset links, sealed to the ``tee_pubkey`` of the verified evidence; once
    per verdict (a guest that lost it attests again). Audited with the names of what was released."""
    now = now or timezone.now()
    allocation = attestation.allocation
    if not attestation.verified:
        raise Conflict("attestation_not_verified", "Secrets are released only against verified evidence.")
    claims = (attestation.evidence or {}).get("claims") or {}
    recipient = claims.get("tee_pubkey") if isinstance(claims, dict) else None
    if not isinstance(recipient, str):
        raise Invalid("validation_error", "The evidence names no tee_pubkey to seal the secrets to.")
    materials = workload_materials(allocation, released=True)
    payload = {
        "allocation": allocation.pk,
        "secrets": dict(materials.secrets),
        "datasets": {str(asset): url for asset, url in materials.datasets.items()},
    }
    try:
        sealed = seal(payload, recipient)
    except EvidenceError as error:
        raise Invalid("validation_error", f"tee_pubkey: {error}") from None
    with transaction.atomic():
        if not Attestation.objects.filter(pk=attestation.pk, released_at=None).update(released_at=now):
            raise Conflict("already_released", "The secrets were released against this verdict already.")
        workload = Workload.from_json(allocation.workload) if allocation.workload else Workload()
        audit_record(
            actor=actor,
            action="allocation.secrets_released",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={
                "attestation": attestation.pk,
                "secrets": [r.name for r in workload.secrets],
                "datasets": list(workload.datasets),
            },
        )
    return sealed
