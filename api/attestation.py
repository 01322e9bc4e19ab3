"""The confidential guest's way in: a nonce, then its evidence, then (once verified) its secrets, sealed.

Called by the attestation agent inside a confidential VM, not by a tenant's members: each request carries the
allocation's attestation credential (``Authorization: Bearer lat_...``, rendered into the pod). An unknown
allocation and a wrong credential answer the same 401, so neither tells the other apart. The protocol and the
threat each step answers are in docs/kubernetes.md ("Confidential VMs: attestation and the key broker").
"""

from __future__ import annotations

from typing import Any, ClassVar

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.base import LadderView
from api.serializers import StrictSerializer
from core.actor import Actor
from core.errors import ServiceError
from core.ratelimit import credential_digest
from provisioning.models import Allocation, AttestationOutcome
from provisioning.services.attestation import (
    allocation_host,
    attestation_challenge,
    attestation_guest,
    attestation_release,
    attestation_submit,
    verifier,
)

GUEST = Actor.system("attestation")
# A refusal's HTTP status: evidence that is not fresh is a conflict with what Ladder issued; the rest is refused.
_STATUS = {AttestationOutcome.STALE: 409}


def _credential(request: Request) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class ChallengeSerializer(serializers.Serializer[Any]):
    allocation = serializers.IntegerField()
    host = serializers.CharField()
    tee = serializers.CharField(help_text="The CPU TEE the host is declared with: the evidence must claim it.")
    verifier = serializers.CharField()
    nonce = serializers.CharField(help_text="Put it in the evidence as eat_nonce; usable once, until expires_at.")
    expires_at = serializers.DateTimeField()


class EvidenceSerializer(StrictSerializer):
    evidence = serializers.JSONField(help_text='The verifier\'s format; built in: {"format": "ladder-node-key", ...}.')


class SealedSerializer(serializers.Serializer[Any]):
    alg = serializers.CharField()
    epk = serializers.CharField()
    iv = serializers.CharField()
    ciphertext = serializers.CharField()


class VerdictSerializer(serializers.Serializer[Any]):
    attestation = serializers.IntegerField()
    outcome = serializers.CharField()
    release = SealedSerializer(
        help_text="The workload's secrets and dataset links, sealed to the evidence's tee_pubkey (X25519, HKDF-SHA256,"
        " AES-256-GCM): {allocation, secrets: {name: value}, datasets: {id: url}}."
    )


class ChallengeRequestSerializer(StrictSerializer):
    """Nothing to send: the allocation is in the path, the credential in the header."""


class _GuestView(LadderView):
    base_permissions: ClassVar[list[type]] = [AllowAny]
    authentication_classes = ()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Not LadderView's: a guest is no tenant member or user, so it has no Idempotency-Key scope, and needs
        # none (each evidence is single-use by its nonce; a lost answer is a new challenge).
        APIView.initial(self, request, *args, **kwargs)
        if any("\x00" in str(value) for value in kwargs.values()):
            raise NotFound()

    def throttle_subject(self, request: Request) -> str | None:
        """A guest is counted per allocation and credential, never per address: tenants' VMs reach Ladder through
        shared NATs. A wrong credential gets a counter of its own, so nobody can spend a guest's allowance."""
        credential = _credential(request)
        if not credential:
            return None
        return f"guest:{self.kwargs.get('allocation_id')}:{credential_digest(credential)}"

    def guest(self, request: Request, allocation_id: int) -> Allocation:
        allocation = attestation_guest(allocation_id=allocation_id, credential=_credential(request))
        if allocation is None:
            raise ServiceError(
                "not_authenticated",
                "Send the allocation's attestation credential (Authorization: Bearer lat_...).",
                status=401,
            )
        return allocation


class AttestationChallengeView(_GuestView):
    @extend_schema(request=ChallengeRequestSerializer, responses={200: ChallengeSerializer})
    def post(self, request: Request, allocation_id: int) -> Response:
        """A fresh nonce for the guest's next evidence (409 ``too_many_challenges`` when eight are open)."""
        allocation = self.guest(request, allocation_id)
        ChallengeRequestSerializer(data=request.data).is_valid(raise_exception=True)
        host = allocation_host(allocation)
        challenge = attestation_challenge(allocation=allocation)
        return Response(
            ChallengeSerializer(
                {
                    "allocation": allocation.pk,
                    "host": host.hostname if host else "",
                    "tee": host.cpu_tee if host else "",
                    "verifier": verifier().name,
                    "nonce": challenge.nonce,
                    "expires_at": challenge.expires_at,
                }
            ).data
        )


class AttestationEvidenceView(_GuestView):
    @extend_schema(request=EvidenceSerializer, responses={200: VerdictSerializer})
    def post(self, request: Request, allocation_id: int) -> Response:
        """Judge the evidence and record the verdict. Verified: the workload's secrets, sealed to the evidence's
        ``tee_pubkey``. Refused: 403 ``attestation_forged`` (not the host's, or for another allocation),
        ``attestation_refused`` (the host says it is not confidential), ``attestation_unverifiable`` (no key is
        registered for the host), or 409 ``attestation_stale`` (a nonce not issued for it, expired or used)."""
        allocation = self.guest(request, allocation_id)
        body = EvidenceSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        record = attestation_submit(allocation=allocation, evidence=body.validated_data["evidence"], actor=GUEST)
        if not record.verified:
            raise ServiceError(
                f"attestation_{record.outcome}",
                f"The evidence was refused: {record.detail}.",
                status=_STATUS.get(AttestationOutcome(record.outcome), 403),
                extra={"attestation": record.pk},
            )
        sealed = attestation_release(attestation=record, actor=GUEST)
        return Response(
            VerdictSerializer({"attestation": record.pk, "outcome": record.outcome, "release": sealed}).data
        )
