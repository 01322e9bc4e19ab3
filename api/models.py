"""Stored responses for ``Idempotency-Key`` replay."""

from django.db import models
from django.utils import timezone


class IdempotencyRecord(models.Model):
    """One POST made with an Idempotency-Key, scoped to a tenant (``tenant:<id>``) or a staff user (``user:<id>``).

    ``status_code`` is null while the first request is still being handled.
    """

    scope = models.CharField(max_length=64)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True)
    content_type = models.CharField(max_length=100, blank=True)
    response_body = models.JSONField(null=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="idempotency_scope_key_unique")]
        indexes = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"{self.scope}:{self.key}"
