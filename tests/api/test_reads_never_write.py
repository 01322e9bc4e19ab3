"""Reads never write: every GET endpoint of the API, with the Kubernetes provisioner configured and work in flight
in the cluster (an allocation, a volume and its snapshot), issues no INSERT, UPDATE or DELETE. Allocations and
volumes follow their cluster only when reconciliation runs (the beat task, or an operator's POST
/api/v1/ops/reconcile)."""

from __future__ import annotations

import re
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from compliance.services.erasure import erasure_request_create
from compliance.services.holds import AssetScope, legal_hold_create
from core.models import AuditEvent
from lifecycle.services.customers import allocation_request
from lifecycle.services.volumes import volume_create, volume_snapshot_create
from provisioning.domain.states import AllocationState as S
from provisioning.drivers.base import provisioner
from provisioning.models import Allocation, Node, Region, Volume, VolumeSnapshot
from provisioning.services.placing import AllocationSpec
from tests.fakes.kubernetes import K8sServer
from tests.support import SYSTEM
from tests.support.data import asset

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|MERGE)\b", re.IGNORECASE)
# GETs that are not reads of Ladder's state, and why. Called here all the same (they must not fail), but their
# writes are expected.
NOT_READS = {
    # The gateway's admission of a tenant's request to its endpoint (the caller's method is GET whatever the
    # request's own): the first request to an idle serverless endpoint wakes it, and each call keeps its idle clock.
    "/api/v1/gateway/authorize",
}


def session(user: Any) -> APIClient:
    """Signed in without an API key: a key's last-use bookkeeping is a (queued) write of its own."""
    client = APIClient()
    client.force_authenticate(user)
    return client


def get_paths() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(path for path, operations in schema["paths"].items() if "get" in operations)


def volume_with_a_snapshot(server: K8sServer, tenant: Any, settings: Any, capture: Any) -> tuple[Volume, Any]:
    """A volume on the cluster, bound and available, and a snapshot of it the cluster has taken but Ladder has not
    yet observed: a read that reconciled would move it to ready."""
    settings.LADDER_VOLUME_STORAGE_CLASSES = "eu-west/filesystem=ladder-cephfs-eu-west"
    settings.LADDER_VOLUME_SNAPSHOT_CLASSES = "eu-west/filesystem=ladder-cephfs-eu-west"
    region = Region.objects.get(code="eu-west")
    with capture(execute=True):
        volume = volume_create(tenant=tenant, name="corpus", region=region, kind="filesystem", size_gb=10, actor=SYSTEM)
    status = {"phase": "Bound", "capacity": {"storage": "10Gi"}}
    server.set_status("v1", "persistentvolumeclaims", volume.backend_name, "ladder-acme", status)
    provisioner().volumes().reconcile(timezone.now())
    volume.refresh_from_db()
    assert volume.state == "available"
    with capture(execute=True):
        snapshot = volume_snapshot_create(volume=volume, name="before", actor=SYSTEM)
    snapshot.refresh_from_db()
    ready = {"readyToUse": True, "boundVolumeSnapshotContentName": "snapcontent-1"}
    server.set_status("snapshot.storage.k8s.io/v1", "volumesnapshots", snapshot.backend_name, "ladder-acme", ready)
    return volume, snapshot


def test_no_get_endpoint_writes(
    k8s_fleet: K8sServer,
    acme: Any,
    alice: Any,
    compliance: Any,
    operator: Any,
    finance: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # the provisioning task runs inline after commit
        allocation = allocation_request(
            tenant=acme,
            name="work",
            spec=AllocationSpec(rung="container", gpu_models=("H100-SXM-80GB",), gpus=1),
            actor=SYSTEM,
        )
    allocation.refresh_from_db()
    assert allocation.state == S.PROVISIONING  # applied to the cluster, its pod not ready yet
    k8s_fleet.set_status(
        "v1",
        "pods",
        f"ldr-{allocation.pk}",
        "ladder-acme",
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )  # the cluster now runs it: a read that reconciled would move it to running
    volume, snapshot = volume_with_a_snapshot(k8s_fleet, acme, settings, django_capture_on_commit_callbacks)
    data = asset(acme, name="corpus", category="dataset", content=b"the corpus")
    hold = legal_hold_create(
        tenant=acme, matter="m", reason="r", scope=AssetScope(categories=["checkpoint"]), lock_until=None, actor=SYSTEM
    )
    erasure = erasure_request_create(tenant=acme, actor=SYSTEM, asset_ids=[data.pk])
    node = Node.objects.order_by("pk").first()
    assert node is not None
    values = {
        "/api/v1/allocations/{id}": allocation.pk,
        "/api/v1/allocations/{id}/logs": allocation.pk,
        "/api/v1/allocations/{id}/events": allocation.pk,
        "/api/v1/allocations/{id}/cold-starts": allocation.pk,  # not an endpoint: 409, a read all the same
        "/api/v1/allocations/{id}/metrics": allocation.pk,  # from Prometheus (unavailable here): a read all the same
        "/api/v1/data/downloads/{asset_id}": data.pk,  # no signature: 422, a read all the same
        "/api/v1/api-keys/{id}": 0,  # 404 is a read too
        "/api/v1/reservations/{id}": 0,
        "/api/v1/compliance/audit-events/{seq}": AuditEvent.objects.order_by("seq").values_list("seq", flat=True)[0],
        "/api/v1/compliance/legal-holds/{id}": hold.pk,
        "/api/v1/data-assets/{id}": data.pk,
        "/api/v1/data-assets/{id}/content": data.pk,
        "/api/v1/erasure-requests/{id}": erasure.pk,
        "/api/v1/finance/reconciliation-runs/{id}": 0,  # 404 is a read too
        "/api/v1/finance/exports/{id}": 0,  # 404 is a read too
        "/api/v1/finance/exports/{id}/download": 0,
        "/api/v1/finance/exports/{id}/signature": 0,
        "/api/v1/members/{id}": alice.membership.pk,
        "/api/v1/ops/clusters/{name}": "k8s-eu-west-1a",
        "/api/v1/ops/defragment/{id}": 0,  # 404 is a read too
        "/api/v1/ops/nodes/{id}": node.pk,
        "/api/v1/ops/nodes/{id}/diagnosis": node.pk,
        "/api/v1/ops/nodes/{id}/gpu-errors": node.pk,
        "/api/v1/retention-policies/{category}": "dataset",
        "/api/v1/ssh-keys/{id}": 0,  # 404 is a read too
        "/api/v1/volumes/{id}": volume.pk,
        "/api/v1/volumes/{id}/snapshots": volume.pk,
        "/api/v1/volume-snapshots/{id}": snapshot.pk,
        "/api/v1/secrets/{name}": "NONE",
    }
    clients = {
        "ops": session(operator),
        "compliance": session(compliance),
        "finance": session(finance),
        "tenant": session(alice),
    }
    # GETs that need a query to do their work (without it they answer 422, a read too, but test less).
    queries = {"/api/v1/finance/reconciliation": f"?month={timezone.now():%Y-%m}"}
    missing, writers, answered = [], {}, {}
    for template in get_paths():
        path = template
        if "{" in template:
            if template not in values:
                missing.append(template)
                continue
            path = re.sub(r"\{[^}]+\}", str(values[template]), template)
        who = next((k for k in ("ops", "compliance", "finance") if path.startswith(f"/api/v1/{k}")), "tenant")
        with CaptureQueriesContext(connection) as captured:
            response = clients[who].get(path + queries.get(template, ""))
        answered[template] = response.status_code
        written = [q["sql"] for q in captured.captured_queries if WRITES.match(q["sql"])]
        if written and template not in NOT_READS:
            writers[template] = written
    assert not missing, f"GET endpoints this test does not know how to reach: {missing}"
    assert not writers, f"GET endpoints that wrote: {writers}"
    assert all(status < 500 for status in answered.values()), answered
    assert answered["/api/v1/allocations/{id}"] == 200
    assert answered["/api/v1/volumes/{id}"] == answered["/api/v1/volume-snapshots/{id}"] == 200

    # What the reads showed is the state last observed; reconciliation is what moves it.
    assert Allocation.objects.get(pk=allocation.pk).state == S.PROVISIONING
    assert VolumeSnapshot.objects.get(pk=snapshot.pk).state == "creating"
    reconciled = session(operator).post("/api/v1/ops/reconcile")
    assert reconciled.status_code == 200, reconciled.content
    assert reconciled.json()["looked_at"] >= 1
    body = session(alice).get(f"/api/v1/allocations/{allocation.pk}").json()
    assert body["state"] == "running"
    assert body["observed_at"] == reconciled.json()["observed_at"]  # the moment the reconcile recorded
    assert session(alice).get(f"/api/v1/volume-snapshots/{snapshot.pk}").json()["state"] == "ready"


def test_only_operators_reconcile(api: Any, alice: Any, finance: Any) -> None:
    assert api(alice).post("/api/v1/ops/reconcile").status_code == 403
    assert session(finance).post("/api/v1/ops/reconcile").status_code == 403
