"""Attestation of confidential VMs: a confidential allocation becomes ``running`` only once a verifier has
accepted its evidence (the TEE's report and the GPU's confidential-computing mode), and the verdict is recorded.

The verifier is a hook (``LADDER_ATTESTATION_VERIFIER``): ``simulated`` accepts the evidence the simulated fleet
produces and nothing else; a deployment plugs in its attestation service (NVIDIA NRAS, Intel Trust Authority, an
SEV-SNP verifier) by dotted path to a class with ``name`` and ``verify(allocation=, evidence=)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from core.actor import Actor
from core.audit import audit_record
from provisioning.models import Allocation, Attestation


@dataclass(frozen=True)
class Verdict:
    verified: bool
    detail: str = ""


class AttestationVerifier(Protocol):
    name: str

    def verify(self, *, allocation: Allocation, evidence: dict[str, Any]) -> Verdict: ...


class SimulatedVerifier:
    """Accepts exactly the evidence the simulated fleet reports: a TEE and the GPU in CC mode."""

    name = "simulated"

    def verify(self, *, allocation: Allocation, evidence: dict[str, Any]) -> Verdict:
        if evidence.get("tee") not in ("snp", "tdx"):
            return Verdict(False, "no TEE report (SEV-SNP or TDX)")
        if evidence.get("gpu_cc_mode") != "on":
            return Verdict(False, "the GPU is not in confidential-computing mode")
        return Verdict(True, f"{evidence['tee']} report and GPU CC mode accepted (simulated verifier)")


def verifier() -> AttestationVerifier:
    path = settings.LADDER_ATTESTATION_VERIFIER
    found: AttestationVerifier = SimulatedVerifier() if path == "simulated" else import_string(path)()
    return found


def attestation_record(*, allocation: Allocation, evidence: dict[str, Any], actor: Actor) -> Attestation:
    """Verify ``evidence`` and record the verdict (audited); the caller moves the allocation on a verified one."""
    judge = verifier()
    verdict = judge.verify(allocation=allocation, evidence=evidence)  # a real verifier is remote: no transaction
    # The record and its audit event commit together. Drivers call this from their tasks, outside any transaction.
    with transaction.atomic():
        record = Attestation.objects.create(
            allocation=allocation,
            verifier=judge.name,
            verified=verdict.verified,
            evidence=evidence,
            detail=verdict.detail[:500],
        )
        audit_record(
            actor=actor,
            action="allocation.attested",
            target_type="allocation",
            target_id=allocation.pk,
            tenant=allocation.tenant,
            data={"verified": verdict.verified, "verifier": judge.name, "detail": verdict.detail},
        )
    return record


def attested(allocation: Allocation) -> bool:
    latest = allocation.attestations.first()
    return latest is not None and latest.verified
