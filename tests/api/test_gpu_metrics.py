"""``GET /api/v1/allocations/{id}/metrics`` without Prometheus in the way: its query refused with a stable code,
another tenant's allocation 404, a Prometheus that does not answer said in ``unavailable``; and the simulated
fleet's exporter: each node's exposition (a MIG instance's own series, the parent's board series) and the targets
Prometheus discovers, served only while the simulated fleet is the provisioner. (With Prometheus:
test_gpu_metrics_prometheus.py.)"""

from __future__ import annotations

from typing import Any

from django.test import Client

from core.models import AuditEvent
from provisioning.domain.gpu_metrics import gpu_instance_id
from provisioning.models import Gpu, Node
from tests.support import assert_problem
from tests.support.billing import at, load_fleet, place, run

URL = "/api/v1/allocations"


def test_a_bad_window_is_refused_with_a_stable_code(api: Any, alice: Any, acme: Any, charlie: Any) -> None:
    load_fleet()
    job = run(place(acme, rung="job", gpus=1), at(0))
    client = api(alice)
    bad = client.get(f"{URL}/{job.pk}/metrics", {"from": "2026-12-01T10:00:00Z", "to": "2026-12-01T09:00:00Z"})
    assert_problem(bad, 422, "metrics_bad_range")
    month = {"from": "2026-11-01T00:00:00Z", "to": "2026-12-01T00:00:00Z", "step": 1}
    many = client.get(f"{URL}/{job.pk}/metrics", month)
    assert_problem(many, 422, "metrics_too_many_points")
    assert "at most 11000" in many.json()["detail"]
    assert_problem(client.get(f"{URL}/{job.pk}/metrics", {"step": 0}), 422, "validation_error")
    assert_problem(client.get(f"{URL}/{job.pk}/metrics", {"form": "yesterday"}), 422, "validation_error")
    assert api(charlie).get(f"{URL}/{job.pk}/metrics").status_code == 404


def test_without_prometheus_the_read_says_why(api: Any, alice: Any, acme: Any, settings: Any) -> None:
    settings.LADDER_PROMETHEUS_URL = "http://127.0.0.1:9"
    load_fleet()
    job = run(place(acme, rung="job", gpus=1), at(0))
    body = api(alice).get(f"{URL}/{job.pk}/metrics").json()
    assert body["unavailable"] == "Prometheus at http://127.0.0.1:9 did not answer: ConnectionError."
    assert body["metrics"]["sm_active"] == {"unit": "ratio", "combined": "mean", "all": [], "devices": {}}
    assert body["step_seconds"] == 15  # an hour over 240 points
    assert [d["uuid"] for d in body["devices"]] == [job.devices.get().gpu_uuid]


def test_the_simulated_exporter_serves_each_nodes_gpus_as_dcgm_exporter_does(acme: Any, settings: Any) -> None:
    load_fleet()
    slice_ = run(place(acme, mig_profile="1g.10gb"), at(0))
    device = slice_.devices.get()
    text = Client().get(f"/simulated/dcgm/{device.hostname}/metrics").content.decode()
    instance = gpu_instance_id(1, device.mig_start or 0)
    own = [line for line in text.splitlines() if f'UUID="{device.gpu_uuid}"' in line]
    assert any(
        line.startswith("DCGM_FI_DEV_FB_USED{")
        and f'GPU_I_PROFILE="1g.10gb",GPU_I_ID="{instance}"' in line
        and f'namespace="ladder-acme",pod="ldr-{slice_.pk}-0"' in line
        for line in own
    )
    board = [line for line in own if line.startswith("DCGM_FI_DEV_POWER_USAGE{")]
    assert len(board) == 1
    assert "GPU_I_ID" not in board[0]  # the parent's power, not the instance's
    assert "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge" in text
    targets = Client().get("/simulated/dcgm/targets").json()
    assert {"targets": ["testserver"], "labels": {"__metrics_path__": f"/simulated/dcgm/{device.hostname}/metrics",
                                                  "node": device.hostname}} in targets  # fmt: skip
    assert Client().get("/simulated/dcgm/no-such-host/metrics").status_code == 404
    settings.LADDER_PROVISIONER = "kubernetes"
    assert Client().get("/simulated/dcgm/targets").status_code == 404


def test_xids_are_injected_into_the_simulated_fleet_only(api: Any, operator: Any, alice: Any, settings: Any) -> None:
    load_fleet()
    node = Node.objects.order_by("hostname").first()
    assert node is not None
    client = api(operator)
    assert (
        client.post(f"/api/v1/ops/nodes/{node.pk}/xid", {"gpu_index": 0, "xid": 79}, format="json").status_code == 200
    )
    assert Gpu.objects.get(node=node, index=0).simulated_xid == 79
    assert AuditEvent.objects.filter(action="node.xid_injected", target_id=str(node.pk)).count() == 1
    assert (
        api(alice).post(f"/api/v1/ops/nodes/{node.pk}/xid", {"gpu_index": 0, "xid": 79}, format="json").status_code
        == 403
    )
    assert client.get(f"/api/v1/ops/nodes/{node.pk}/gpu-errors").json()["unavailable"].startswith("Prometheus at")
    settings.LADDER_PROVISIONER = "kubernetes"
    refused = client.post(f"/api/v1/ops/nodes/{node.pk}/xid", {"gpu_index": 0, "xid": 79}, format="json")
    assert_problem(refused, 409, "not_simulated")
