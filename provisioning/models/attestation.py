"""A confidential VM's attestations: the verdict on each piece of evidence its guest sent, and the single-use nonces
Ladder issued for it."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class AttestationOutcome(models.TextChoices):
    VERIFIED = "verified"
    FORGED = "forged"  # not from the host: bad signature, another host's or allocation's, unsigned (an annotation)
    STALE = "stale"  # bound to a nonce Ladder did not issue for it, or one expired or already used
    REFUSED = "refused"  # authentic, and says the VM is not confidential (wrong TEE, GPU not in CC mode)
    UNVERIFIABLE = "unverifiable"  # no key registered for the host: nothing it sends can be verified


class Attestation(models.Model):
    """The verdict on a confidential VM's attestation evidence; the allocation runs only after a verified one."""

    allocation = models.ForeignKey("provisioning.Allocation", on_delete=models.CASCADE, related_name="attestations")
    verifier = models.CharField(max_length=64)
    verified = models.BooleanField()
    outcome = models.CharField(max_length=16, choices=AttestationOutcome.choices, blank=True)
    evidence = models.JSONField(default=dict, help_text="What was verified: TEE type, measurements, GPU CC mode.")
    detail = models.CharField(max_length=500, blank=True)
    nonce = models.CharField(max_length=64, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    # When the workload's secrets were released to the guest against this verdict (once per verdict).
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-recorded_at", "-id"]

    def __str__(self) -> str:
        return f"{self.allocation_id}: {'verified' if self.verified else 'refused'} by {self.verifier}"


class AttestationChallenge(models.Model):
    """A nonce Ladder issued to a confidential VM's guest: its next evidence must carry it. Single use (``used_at``)
    and short-lived (``expires_at``), so recorded evidence cannot be replayed."""

    allocation = models.ForeignKey(
        "provisioning.Allocation", on_delete=models.CASCADE, related_name="attestation_challenges"
    )
    nonce = models.CharField(max_length=64, unique=True)
    issued_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["allocation", "used_at"])]

    def __str__(self) -> str:
        return f"{self.allocation_id}: nonce issued {self.issued_at:%Y-%m-%d %H:%M:%S}"
