"""The hash-chained audit log: every app's services record their changes here.

``AuditEvent`` rows are append-only: on PostgreSQL a trigger refuses UPDATE, DELETE and TRUNCATE. Appends are
serialized by locking the single ``AuditChainHead`` row, which also records the last seq and hash so that
events removed from the end of the chain are detected. The tables keep the names they had when the log lived in
``compliance``; only the model state moved.
"""

from django.db import models

from core.domain.chain import GENESIS_HASH


class ActorType(models.TextChoices):
    USER = "user"
    API_KEY = "api_key"
    SYSTEM = "system"


class AuditEvent(models.Model):
    seq = models.BigIntegerField(primary_key=True)
    at = models.DateTimeField()
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64)
    actor_label = models.CharField(max_length=150)
    api_key_prefix = models.CharField(max_length=16, blank=True)
    tenant = models.ForeignKey(
        "tenancy.Tenant", on_delete=models.PROTECT, null=True, blank=True, related_name="audit_events"
    )
    action = models.CharField(max_length=100)
    target_type = models.CharField(max_length=100)
    target_id = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        db_table = "compliance_auditevent"  # the table predates the base app; its triggers name it
        ordering = ["seq"]
        permissions = [("verify_auditchain", "Can verify the audit chain")]
        indexes = [
            models.Index(fields=["tenant", "seq"]),
            models.Index(fields=["action"]),
            models.Index(fields=["at"]),
            models.Index(fields=["actor_label"]),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action}"


class AuditChainHead(models.Model):
    """The single row locked by every append; it holds the last seq and hash."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    seq = models.BigIntegerField(default=0)
    hash = models.CharField(max_length=64, default=GENESIS_HASH)

    class Meta:
        db_table = "compliance_auditchainhead"

    def __str__(self) -> str:
        return f"head #{self.seq}"
