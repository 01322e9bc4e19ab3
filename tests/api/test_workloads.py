"""Workloads on every rung, on the simulated fleet: submitted with the allocation, validated (422 naming the field,
409 ``residency`` for a dataset elsewhere), shown on reads with their access details, logged, evented, kept as
governed data when they end; a secret's value appears in no answer, audit event, log line or error; another
tenant's secrets, keys, logs and events answer 404."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.test import override_settings

from compliance.models import DataAsset
from compliance.services.assets import data_asset_content
from core.models import AuditEvent
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM, assert_problem
from tests.support.attestation import simulated_keys_registered
from tests.support.fleet_documents import node

URL = "/api/v1/allocations"
H100, H200 = "H100-SXM-80GB", "H200-141GB"
VALUE = "hf_the-secret-value-that-never-leaks"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def fleet_document() -> dict[str, Any]:
    """One EU hall with H100 hosts and a confidential H200 host, and a US hall."""
    return {
        "regions": [
            {
                "code": "eu-west",
                "name": "EU West",
                "jurisdiction": "EU",
                "halls": [
                    {
                        "code": "eu-west-1a",
                        "fenced_for": None,
                        "nodes": [
                            node("euw1a-01", "eu-west-1a/nvl-0"),
                            node("euw1a-02", "eu-west-1a/nvl-0"),
                            node("euw1a-03", "eu-west-1a/nvl-1"),
                            node("euw1a-cc", "eu-west-1a/nvl-2", H200, cc_capable=True, cc_mode=True, cpu_tee="snp"),
                        ],
                    }
                ],
            },
            {
                "code": "us-east",
                "name": "US East",
                "jurisdiction": "US",
                "halls": [{"code": "us-east-1a", "fenced_for": None, "nodes": [node("use1a-01", "us-east-1a/nvl-0")]}],
            },
        ]
    }


@pytest.fixture
def fleet(db: None) -> Any:
    loaded = fleet_load(document=fleet_document(), actor=SYSTEM)
    simulated_keys_registered()
    return loaded


def public_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate()
    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


@pytest.fixture
def owned(api: Any, alice: Any) -> dict[str, Any]:
    """Alice's secret and SSH key."""
    client = api(alice)
    assert client.post("/api/v1/secrets", {"name": "HF_TOKEN", "value": VALUE}, format="json").status_code == 201
    key = client.post("/api/v1/ssh-keys", {"name": "laptop", "public_key": public_key()}, format="json")
    return {"key": key.json()["id"]}


def shape_of(rung: str) -> dict[str, Any]:
    shapes: dict[str, dict[str, Any]] = {
        "bare_metal": {"gpu_model": H100, "nodes": 1},
        "vm": {"gpu_model": H100, "gpus": 2},
        "confidential_vm": {"gpu_model": H200, "gpus": 1},
        "container": {"gpu_model": H100, "gpus": 1},
        "job": {"gpu_model": H100, "gpus": 2, "gang": {"size": 2, "topology": "nvlink"}},
        "serverless": {"gpu_model": H100, "mig_profile": "1g.10gb"},
    }
    return shapes[rung]


def workload_of(rung: str, key: int) -> dict[str, Any]:
    """Everything the rung takes: image and command (or os_image and cloud_init), env, a secret, a port, a key."""
    env = [{"name": "MODEL", "value": "llama-3-8b"}]
    secrets = [{"name": "HF_TOKEN"}]
    if rung in ("vm", "bare_metal"):
        spec: dict[str, Any] = {
            "os_image": "ubuntu-24.04",
            "cloud_init": "#cloud-config\npackages: [nvtop]\n",
            "ssh_keys": [key],
            "env": env,
            "secrets": secrets,
        }
        if rung == "vm":
            spec["ports"] = [{"port": 8888, "protocol": "http", "expose": "public"}]
        return spec
    spec = {
        "image": IMAGE,
        "command": ["python", "-m", "serve"] if rung == "serverless" else ["torchrun", "train.py"],
        "args": ["--epochs", "3"],
        "env": env,
        "secrets": secrets,
        "ports": [{"port": 8000, "protocol": "http", "expose": "public"}],
    }
    if rung == "container":
        spec["ssh_keys"] = [key]
    if rung == "job":
        spec["checkpoint"] = {"path": "/ckpt", "interval_s": 60}
    return spec


def launch(client: Any, rung: str, workload: dict[str, Any], capture: Any, **extra: Any) -> Any:
    with capture(execute=True):
        return client.post(
            URL, {"name": f"my-{rung}", "rung": rung, **shape_of(rung), "workload": workload, **extra}, format="json"
        )


def backdate(allocation_id: int) -> None:
    """The allocation has been running since 2000: plenty of output."""
    since = Allocation.objects.get(pk=allocation_id).running_since
    assert since is not None
    Allocation.objects.filter(pk=allocation_id).update(running_since=since.replace(year=2000))


def everything_said(client: Any, allocation_id: int) -> str:
    """Every answer about the allocation and the whole audit log, as text."""
    answers = [
        client.get(f"{URL}/{allocation_id}").content,
        client.get(URL).content,
        client.get(f"{URL}/{allocation_id}/logs").content,
        client.get(f"{URL}/{allocation_id}/events").content,
    ]
    audit = [json.dumps(e.data) for e in AuditEvent.objects.all()]
    return "\n".join([*(a.decode() for a in answers), *audit])


@override_settings(LADDER_SIM_PROVISION_SECONDS=0, LADDER_SIM_LOG_SECONDS=0.001)
@pytest.mark.parametrize("rung", ["bare_metal", "vm", "confidential_vm", "container", "job", "serverless"])
def test_each_rung_runs_the_tenants_workload_and_shows_how_to_reach_it(
    api: Any,
    alice: Any,
    fleet: Any,
    owned: dict[str, Any],
    rung: str,
    django_capture_on_commit_callbacks: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG")
    client = api(alice)
    made = launch(client, rung, workload_of(rung, owned["key"]), django_capture_on_commit_callbacks)
    assert made.status_code == 201, made.content
    allocation_id = made.json()["id"]
    allocations_reconcile()
    body = client.get(f"{URL}/{allocation_id}").json()
    assert body["state"] == "running", body
    assert body["workload"]["secrets"] == [{"name": "HF_TOKEN", "as": "env"}]
    assert body["workload"]["env"] == [{"name": "MODEL", "value": "llama-3-8b"}]

    access = body["access"]
    if rung in ("bare_metal", "vm", "container"):
        assert access["ssh"] == {
            "host": "ssh.eu-west-1a.ladder.localhost",
            "port": 22,
            "user": f"ldr-{allocation_id}",
            "command": f"ssh ldr-{allocation_id}@ssh.eu-west-1a.ladder.localhost",
        }
    else:
        assert access["ssh"] is None
    if rung == "serverless":
        assert access["endpoint"] == f"http://127.0.0.1:8000/endpoints/{allocation_id}/"
        assert access["urls"] == {}
    else:
        assert access["endpoint"] is None
    if rung in ("container", "job", "confidential_vm"):
        assert access["urls"] == {"8000": f"https://ldr-{allocation_id}-8000.ladder.localhost/"}
    if rung == "vm":
        assert access["urls"] == {"8888": f"https://ldr-{allocation_id}-8888.ladder.localhost/"}
        assert access["console"] == f"http://127.0.0.1:8000/api/v1/allocations/{allocation_id}/logs?follow=1"
    else:
        assert access["console"] is None

    logs = client.get(f"{URL}/{allocation_id}/logs").json()["lines"]
    assert logs, "a running workload has written something"
    if rung in ("vm", "bare_metal"):
        assert "Ubuntu 24.04 LTS" in logs[0]["text"]
        assert logs[0]["source"] == "console"
    else:
        assert logs[0]["text"] == "$ " + " ".join(workload_of(rung, 0)["command"] + ["--epochs", "3"])
    reasons = [e["reason"] for e in client.get(f"{URL}/{allocation_id}/events").json()]
    assert "placed" in reasons
    assert "running" in reasons
    assert "Started" in reasons

    assert_problem(client.delete("/api/v1/secrets/HF_TOKEN"), 409, "secret_in_use")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"{URL}/{allocation_id}").status_code == 200
    allocations_reconcile()
    assert Allocation.objects.get(pk=allocation_id).state == "stopped"
    assert VALUE not in caplog.text
    kept = DataAsset.objects.filter(tenant=alice.membership.tenant, category="job_log")
    assert kept.count() == 1
    assert kept.get().region.code == "eu-west"
    assert VALUE not in everything_said(client, allocation_id)
    assert VALUE.encode() not in data_asset_content(asset=kept.get())


@override_settings(LADDER_SIM_PROVISION_SECONDS=0, LADDER_SIM_LOG_SECONDS=1)
def test_logs_read_since_and_tail_and_follow_streams_until_the_end(
    api: Any, alice: Any, fleet: Any, owned: dict[str, Any], django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    client = api(alice)
    made = launch(client, "container", workload_of("container", owned["key"]), django_capture_on_commit_callbacks)
    allocation_id = made.json()["id"]
    allocations_reconcile()
    backdate(allocation_id)
    tail = client.get(f"{URL}/{allocation_id}/logs?tail=5").json()
    assert len(tail["lines"]) == 5
    newer = client.get(f"{URL}/{allocation_id}/logs", {"since": tail["lines"][2]["at"]}).json()["lines"]
    assert [line["at"] for line in newer[:2]] == [line["at"] for line in tail["lines"][3:]]
    assert_problem(client.get(f"{URL}/{allocation_id}/logs?tail=0"), 422, "validation_error")
    assert_problem(client.get(f"{URL}/{allocation_id}/logs?since=yesterday"), 422, "validation_error")

    with django_capture_on_commit_callbacks(execute=True):
        client.delete(f"{URL}/{allocation_id}")
    allocations_reconcile()
    settings.LADDER_LOG_FOLLOW_POLL_SECONDS = 0
    streamed = client.get(f"{URL}/{allocation_id}/logs?follow=1&tail=3")
    assert streamed["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(x) for x in b"".join(streamed.streaming_content).splitlines()]
    assert len(lines) == 3
    assert all(set(x) == {"at", "source", "text"} for x in lines)


BAD = [
    ("container", {"image": "evil.example.com/miner:1"}, "workload.image"),
    ("container", {"image": "Not An Image"}, "workload.image"),
    ("container", {}, "workload.image"),
    ("container", {"image": IMAGE, "os_image": "ubuntu-24.04"}, "workload.os_image"),
    ("container", {"image": IMAGE, "checkpoint": {"path": "/ckpt"}}, "workload.checkpoint"),
    ("vm", {"image": IMAGE}, "workload.image"),
    ("vm", {"os_image": "windows-95"}, "workload.os_image"),
    ("vm", {"cloud_init": "#cloud-config\n[not: a mapping"}, "workload.cloud_init"),
    ("vm", {"cloud_init": "echo hi"}, "workload.cloud_init"),
    ("job", {"image": IMAGE, "ssh_keys": [1]}, "workload.ssh_keys"),
    (
        "container",
        {"image": IMAGE, "ports": [{"port": 22, "protocol": "tcp", "expose": "public"}]},
        "workload.ports.0.expose",
    ),
    ("container", {"image": IMAGE, "ports": [{"port": 70000}]}, "workload.ports.0.port"),
    ("container", {"image": IMAGE, "env": [{"name": "LADDER_X", "value": "1"}]}, "workload.env.0.name"),
    ("container", {"image": IMAGE, "env": [{"name": "1BAD", "value": "1"}]}, "workload.env.0.name"),
    ("container", {"image": IMAGE, "secrets": [{"name": "MISSING"}]}, "workload.secrets.0.name"),
    ("container", {"image": IMAGE, "ssh_keys": [999999]}, "workload.ssh_keys.0"),
    (
        "container",
        {"image": IMAGE, "volumes": [{"mount_path": "data", "scratch_gb": 1}]},
        "workload.volumes.0.mount_path",
    ),
    ("container", {"image": IMAGE, "volumes": [{"mount_path": "/data"}]}, "workload.volumes.0"),
    ("container", {"image": IMAGE, "volumes": [{"mount_path": "/d", "dataset": 999999}]}, "workload.volumes.0.dataset"),
    ("container", {"image": IMAGE, "pull_secret": "MISSING"}, "workload.pull_secret"),
    ("container", {"image": IMAGE, "shell": "bash"}, "workload.shell"),
    ("container", {"image": IMAGE, "idle_stop_after": 5}, "workload.idle_stop_after"),  # ten minutes at least
    ("vm", {"idle_stop_after": 20_000}, "workload.idle_stop_after"),  # a week at most
    ("serverless", {"image": IMAGE, "idle_stop_after": 30}, "workload.idle_stop_after"),  # it scales to zero
    ("job", {"image": IMAGE, "command": ["x"], "framework": "horovod"}, "workload.framework"),
    ("container", {"image": IMAGE, "command": ["x"], "framework": "mpi"}, "workload.framework"),
    ("job", {"image": IMAGE, "framework": "ray"}, "workload.command"),
    ("job", {"framework": "slurm", "command": ["sbatch", "x"]}, "workload.command"),
    ("job", {"framework": "slurm"}, "workload.ssh_keys"),  # its login node is the way in
    ("job", {"framework": "slurm", "ssh_keys": [999999]}, "gpus"),  # 2 GPUs a member: a Slurm node is a whole host
]


@pytest.mark.parametrize(("rung", "workload", "field"), BAD, ids=[f"{r}-{f}-{i}" for i, (r, _, f) in enumerate(BAD)])
def test_a_workload_the_rung_cannot_run_is_refused_naming_the_field(
    api: Any, alice: Any, fleet: Any, rung: str, workload: dict[str, Any], field: str
) -> None:
    body = {"name": "bad", "rung": rung, **shape_of(rung), "workload": workload}
    problem = assert_problem(api(alice).post(URL, body, format="json"), 422, "validation_error")
    assert field in problem["errors"], problem
    assert not Allocation.objects.exists()


def test_a_dataset_pins_the_work_to_its_region_and_one_elsewhere_is_refused(
    api: Any, alice: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    content = base64.b64encode(b"imagenet shard 0").decode()
    made = client.post(
        "/api/v1/data-assets",
        {"name": "imagenet", "category": "dataset", "region": "us-east", "content": content},
        format="json",
    )
    dataset = made.json()["id"]
    volume = {"image": IMAGE, "volumes": [{"mount_path": "/data", "dataset": dataset}]}
    refused = client.post(
        URL,
        {"name": "far", "rung": "container", **shape_of("container"), "regions": ["eu-west"], "workload": volume},
        format="json",
    )
    assert_problem(refused, 409, "residency")
    with django_capture_on_commit_callbacks(execute=True):
        placed = client.post(
            URL, {"name": "near", "rung": "container", **shape_of("container"), "workload": volume}, format="json"
        )
    assert placed.status_code == 201, placed.content
    assert placed.json()["region"] == "us-east"


def test_the_signed_dataset_link_serves_only_that_asset_until_it_expires(
    api: Any, alice: Any, acme: Any, fleet: Any
) -> None:
    from django.utils import timezone

    from compliance.services.downloads import asset_download_url

    content = base64.b64encode(b"weights").decode()
    made = api(alice).post(
        "/api/v1/data-assets",
        {"name": "w", "category": "dataset", "region": "eu-west", "content": content},
        format="json",
    )
    asset = DataAsset.objects.get(pk=made.json()["id"])
    url = asset_download_url(asset=asset, now=timezone.now()).removeprefix("http://127.0.0.1:8000")
    anonymous = api()
    assert anonymous.get(url).content == b"weights"
    signature = url.rsplit("=", 1)[1]
    forged = url.replace(signature, ("0" if signature[0] != "0" else "1") + signature[1:])
    assert_problem(anonymous.get(forged), 403, "download_refused")
    stale = asset_download_url(asset=asset, now=timezone.now().replace(year=2000)).removeprefix("http://127.0.0.1:8000")
    assert_problem(anonymous.get(stale), 403, "download_refused")


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_a_serverless_endpoint_answers_its_tenants_key_only_and_captures_payloads_when_asked(
    api: Any, alice: Any, charlie: Any, fleet: Any, owned: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    made = launch(client, "serverless", workload_of("serverless", owned["key"]), django_capture_on_commit_callbacks)
    allocation_id = made.json()["id"]
    allocations_reconcile()
    path = f"/endpoints/{allocation_id}/v1/predict"
    assert_problem(api().post(path, {"prompt": "hi"}, format="json"), 401, "not_authenticated")
    assert_problem(api(charlie).post(path, {"prompt": "hi"}, format="json"), 403, "endpoint_forbidden")
    answer = client.post(path, {"prompt": "hi"}, format="json")
    assert answer.status_code == 200
    assert answer.json()["path"] == "/v1/predict"
    assert not DataAsset.objects.filter(category="inference_payload").exists()  # off by default

    assert client.put("/api/v1/data/capture-policy", {"inference_payloads": True}, format="json").status_code == 200
    client.post(path, {"prompt": "keep me"}, format="json")
    kept = DataAsset.objects.get(category="inference_payload")
    assert b"keep me" in data_asset_content(asset=kept)
    assert kept.region.code == "eu-west"

    zero = {"zero_retention": True}
    assert client.put("/api/v1/retention-policies/inference_payload", zero, format="json").status_code == 200
    client.post(path, {"prompt": "not this"}, format="json")
    assert DataAsset.objects.filter(category="inference_payload").count() == 1

    host = f"ldr-{allocation_id}.ladder.localhost"
    gateway = "/api/v1/gateway/authorize"
    assert client.get(gateway, HTTP_X_FORWARDED_HOST=host).status_code == 200
    assert api(charlie).get(gateway, HTTP_X_FORWARDED_HOST=host).status_code == 403
    assert api().get(gateway, HTTP_X_FORWARDED_HOST=host).status_code == 401
    assert_problem(api().get(gateway, HTTP_X_FORWARDED_HOST="example.com"), 403, "endpoint_forbidden")
    # A public port is public while it is exposed (the endpoint itself needs the key).
    notebook = launch(client, "container", workload_of("container", owned["key"]), django_capture_on_commit_callbacks)
    allocations_reconcile()
    port_host = f"ldr-{notebook.json()['id']}-8000.ladder.localhost"
    assert api().get(gateway, HTTP_X_FORWARDED_HOST=port_host).status_code == 200
    assert_problem(api().get(gateway, HTTP_X_FORWARDED_HOST=port_host.replace("8000", "9")), 403, "endpoint_forbidden")


@override_settings(LADDER_SIM_PROVISION_SECONDS=0, LADDER_SIM_LOG_SECONDS=0.001)
def test_a_jobs_logs_and_checkpoint_become_governed_data_with_lineage(
    api: Any, alice: Any, fleet: Any, owned: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    content = base64.b64encode(b"corpus").decode()
    dataset = client.post(
        "/api/v1/data-assets",
        {"name": "corpus", "category": "dataset", "region": "eu-west", "content": content},
        format="json",
    ).json()["id"]
    workload = {**workload_of("job", owned["key"]), "volumes": [{"mount_path": "/data", "dataset": dataset}]}
    allocation_id = launch(client, "job", workload, django_capture_on_commit_callbacks).json()["id"]
    allocations_reconcile()
    backdate(allocation_id)
    with django_capture_on_commit_callbacks(execute=True):
        client.delete(f"{URL}/{allocation_id}")
    allocations_reconcile()
    logs = DataAsset.objects.get(category="job_log")
    checkpoint = DataAsset.objects.get(category="checkpoint")
    for asset in (logs, checkpoint):
        assert list(asset.derived_from.values_list("pk", flat=True)) == [dataset]
        assert asset.region.code == "eu-west"
    assert b"saved checkpoint" in data_asset_content(asset=logs)
    assert checkpoint.size_bytes > 2**30


@override_settings(LADDER_SIM_PROVISION_SECONDS=0)
def test_another_tenant_sees_nothing_of_a_workload(
    api: Any, alice: Any, charlie: Any, fleet: Any, owned: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    made = launch(api(alice), "container", workload_of("container", owned["key"]), django_capture_on_commit_callbacks)
    allocation_id = made.json()["id"]
    other = api(charlie)
    for path in (f"{URL}/{allocation_id}", f"{URL}/{allocation_id}/logs", f"{URL}/{allocation_id}/events"):
        assert_problem(other.get(path), 404, "not_found")
    assert_problem(other.get("/api/v1/secrets/HF_TOKEN"), 404, "not_found")
    assert_problem(other.get(f"/api/v1/ssh-keys/{owned['key']}"), 404, "not_found")
    # Alice's key and secret are no one else's to name.
    theirs = {"image": IMAGE, "ssh_keys": [owned["key"]], "secrets": [{"name": "HF_TOKEN"}]}
    refused = other.post(
        URL, {"name": "x", "rung": "container", **shape_of("container"), "workload": theirs}, format="json"
    )
    assert_problem(refused, 422, "validation_error")


def test_workloads_with_ssh_trust_the_gateways_ca_for_their_own_principal_only(
    api: Any, alice: Any, fleet: Any, owned: dict[str, Any], settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from lifecycle.services.workloads import allocation_materials
    from provisioning.domain.workloads import Workload

    settings.LADDER_SSH_GATEWAY_CA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGatewayCA hall-ca"
    made = launch(api(alice), "container", workload_of("container", owned["key"]), django_capture_on_commit_callbacks)
    allocation = Allocation.objects.get(pk=made.json()["id"])
    materials = allocation_materials(allocation, Workload.from_json(allocation.workload or {}))
    assert materials.ssh_keys[-1] == (
        f'cert-authority,principals="ldr-{allocation.pk}" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGatewayCA hall-ca'
    )
    assert materials.secrets == {"HF_TOKEN": VALUE}


@pytest.mark.parametrize("rung", ["bare_metal", "vm", "confidential_vm", "container", "job", "serverless"])
def test_the_answer_to_a_placement_is_what_reading_it_gives(api: Any, alice: Any, fleet: Any, owned: Any, rung: str):
    # The POST builds its answer from the rows it wrote (api.allocations.placed_answer), not through the serializer
    # a read uses: the two must not drift apart. No task runs here, so nothing changes in between.
    client = api(alice)
    body = {"name": f"my-{rung}", "rung": rung, **shape_of(rung), "workload": workload_of(rung, owned["key"])}
    made = client.post(URL, body, format="json")
    assert made.status_code == 201, made.content
    assert made.json() == client.get(f"{URL}/{made.json()['id']}").json()
