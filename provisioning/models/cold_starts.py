"""A serverless endpoint's cold starts, one row per wake from zero replicas, and which images the simulated fleet's
hosts hold (so a replica placed where its image already is pulls nothing).

``EndpointColdStart`` is written by the state machine as the woken endpoint enters ``running``, in the same
transaction, with the phases its driver reported (``provisioning.domain.cold_start``): the simulated fleet's
model, or the cluster's own signals on Kubernetes. docs/serverless.md, "Cold starts".
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from provisioning.domain.cold_start import ModelSource
from tenancy.models import TenantOwned


class EndpointColdStart(TenantOwned):
    """One wake of an endpoint: from ``woke_at`` until it was warm at ``ready_at``, and each phase of it in
    milliseconds (null: its backend did not report that phase)."""

    allocation = models.ForeignKey("provisioning.Allocation", on_delete=models.CASCADE, related_name="cold_starts")
    woke_at = models.DateTimeField()
    ready_at = models.DateTimeField()
    device_wait_ms = models.PositiveIntegerField(null=True, blank=True)
    image_pull_ms = models.PositiveIntegerField(null=True, blank=True)
    model_load_ms = models.PositiveIntegerField(null=True, blank=True)
    total_ms = models.PositiveIntegerField()
    image_cached = models.BooleanField(null=True, blank=True, help_text="The image was on the node already.")
    model_source = models.CharField(max_length=8, choices=[(s.value, s.value) for s in ModelSource])

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["allocation", "ready_at"]), models.Index(fields=["ready_at"])]

    def __str__(self) -> str:
        return f"{self.allocation_id}: {self.total_ms} ms at {self.ready_at:%Y-%m-%dT%H:%M:%S}"


class NodeImage(models.Model):
    """An image a simulated host holds: a replica ran it there, or it was pulled in advance for an endpoint that
    went idle. A real cluster's nodes keep their own (the kubelet's image store)."""

    node = models.ForeignKey("provisioning.Node", on_delete=models.CASCADE, related_name="images")
    image = models.CharField(max_length=512)
    pulled_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["node", "image"], name="node_image_once")]

    def __str__(self) -> str:
        return f"{self.image} on {self.node_id}"
