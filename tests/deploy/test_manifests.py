"""The Kubernetes manifests (deploy/kustomize): every overlay rendered by ``kubectl kustomize``, every object
validated offline against Kubernetes 1.34's schemas (strict), and the rules of running Ladder checked on what
would be applied: non-root containers on a read-only root filesystem, the probes on the health views, one beat, a
PodDisruptionBudget for every Deployment of several replicas, the migration Job, default-deny NetworkPolicies,
no secret value in the output."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.urls import resolve

from api.health import healthz, readyz
from tests.support import ROOT, require
from tests.support.k8s_schemas import pod_specs, restricted_violations, validate_all
from tests.test_architecture_doc import first_column, section

KUSTOMIZE = ROOT / "deploy" / "kustomize"
OVERLAYS = ["dev", "prod"]
# The keys of the Secret ladder-secrets (docs/operations.md, "Installing"): values that never appear in a
# manifest, only as references to a Secret.
SECRET_NAMES = {
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CACHE_URL",
    "LADDER_BEAT_REDIS_URL",
    "LADDER_MASTER_KEYS",
    "LADDER_AUDIT_SIGNING_KEY",
    "LADDER_SECRETS_KEY",
    "STRIPE_API_KEY",
    "STRIPE_WEBHOOK_SECRET",
    "EMAIL_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
}
# What a secret value looks like, wherever it would hide: Stripe keys, a URL carrying a password, a PEM key.
# Where the image's processes may write besides the data volume (paths inside the containers).
TEMPORARY = {"/tmp", "/tmp/metrics"}  # noqa: S108
SECRET_LOOKS = re.compile(r"sk_(live|test)_|rk_(live|test)_|whsec_|://[^/\s:@]+:[^/\s@]+@|-----BEGIN")


def render(path: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    require(kubectl is not None, "kubectl (for kubectl kustomize)")
    assert kubectl is not None
    out = subprocess.run([kubectl, "kustomize", str(KUSTOMIZE / path)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(f"overlays/{request.param}")


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from spec.get("initContainers") or []
    yield from spec["containers"]


def ladder_containers(objs: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) of every container running the Ladder image."""
    for obj in objs:
        for spec in pod_specs(obj):
            for container in containers(spec):
                if container["image"].rsplit(":", 1)[0].endswith("/ladder"):
                    yield spec, container


def test_every_object_is_valid_for_kubernetes(overlay):
    _, objs = overlay
    validate_all(objs)
    assert {o["metadata"].get("namespace") for o in objs} == {"ladder-dev" if overlay[0] == "dev" else "ladder"}


def test_every_container_runs_unprivileged_on_a_read_only_root(overlay):
    _, objs = overlay
    specs = [spec for obj in objs for spec in pod_specs(obj)]
    assert len(specs) == 4  # web, worker, beat, migrate
    for spec in specs:
        assert restricted_violations(spec) == []
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert spec["automountServiceAccountToken"] is False
        assert spec["serviceAccountName"] == "ladder"
        for container in containers(spec):
            ctx = container["securityContext"]
            assert ctx["readOnlyRootFilesystem"] is True, container["name"]
            assert ctx["capabilities"]["drop"] == ["ALL"]
            assert ctx.get("runAsUser", spec["securityContext"]["runAsUser"]) != 0
            assert container["resources"]["requests"]
            assert container["resources"]["limits"]["memory"]


def test_ladder_containers_can_write_only_where_the_image_says(overlay):
    """The temporary directory and the Prometheus multiprocess one everywhere; the data volume (exports) in web and
    workers."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "PROMETHEUS_MULTIPROC_DIR=/tmp/metrics" in dockerfile
    assert "LADDER_EXPORT_DIR=/var/lib/ladder/exports" in dockerfile
    found = 0
    for _, container in ladder_containers(overlay[1]):
        if container["name"] == "static-copy":
            continue
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert mounts >= TEMPORARY, container["name"]
        if container["name"] in ("web", "worker"):
            assert "/var/lib/ladder" in mounts
        found += 1
    assert found == 4


def test_the_web_server_is_gunicorn_with_one_thread_per_process_and_probes_on_the_health_views(overlay):
    _, objs = overlay
    (web,) = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == "ladder-web"]
    spec = web["spec"]["template"]["spec"]
    (gunicorn,) = [c for c in spec["containers"] if c["name"] == "web"]
    command = gunicorn["command"]
    assert command[0] == "gunicorn"
    assert "--config=config/gunicorn.conf.py" in command
    assert "--threads=1" in command
    assert "--workers=$(LADDER_WEB_WORKERS)" in command
    assert int(next(e["value"] for e in gunicorn["env"] if e["name"] == "LADDER_WEB_WORKERS")) >= 1
    assert command[-1] == "config.wsgi:application"
    assert {k: v for k, v in gunicorn["livenessProbe"]["httpGet"].items() if k != "httpHeaders"} == {
        "path": "/healthz",
        "port": "http",
    }
    assert {k: v for k, v in gunicorn["readinessProbe"]["httpGet"].items() if k != "httpHeaders"} == {
        "path": "/readyz",
        "port": "http",
    }
    assert gunicorn["ports"] == [{"name": "http", "containerPort": 8000}]
    assert resolve("/healthz").func is healthz
    assert resolve("/readyz").func is readyz
    # Static files: copied out of the image, served by nginx on the Service's port "static", routed at /static/.
    assert any("/app/staticfiles/." in c["command"] for c in spec["initContainers"])
    assert settings.STATIC_URL == "/static/"
    assert str(settings.STATIC_ROOT) == str(ROOT / "staticfiles")
    (ingress,) = of_kind(objs, "Ingress")
    routes = {p["path"]: p["backend"]["service"]["port"]["name"] for p in ingress["spec"]["rules"][0]["http"]["paths"]}
    assert routes == {"/static/": "static", "/": "http"}


def test_a_worker_reads_every_queue_tasks_go_to(overlay):
    _, objs = overlay
    routed = {route.get("queue") for route in (getattr(settings, "CELERY_TASK_ROUTES", None) or {}).values()}
    queues = {settings.CELERY_TASK_DEFAULT_QUEUE} | (routed - {None})
    read = set()
    for deployment in of_kind(objs, "Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            if "worker" in container["command"]:
                (flag,) = [a for a in container["command"] if a.startswith("--queues=")]
                read |= set(flag.removeprefix("--queues=").split(","))
                assert deployment["metadata"]["name"] == "ladder-worker-" + flag.removeprefix("--queues=")
    assert read == queues


def test_exactly_one_beat_holding_redbeats_lock(overlay):
    _, objs = overlay
    beats = [
        d
        for d in of_kind(objs, "Deployment")
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["command"][:3] == ["celery", "--app=config", "beat"]
    ]
    assert len(beats) == 1
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    scaled = {h["spec"]["scaleTargetRef"]["name"] for h in of_kind(objs, "HorizontalPodAutoscaler")}
    assert "ladder-beat" not in scaled
    (container,) = beat["spec"]["template"]["spec"]["containers"]
    assert {"name": "LADDER_BEAT_SCHEDULER", "value": "redbeat"} in container["env"]


def test_every_deployment_of_several_replicas_has_a_disruption_budget(overlay):
    name, objs = overlay
    budgets = of_kind(objs, "PodDisruptionBudget")
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in of_kind(objs, "HorizontalPodAutoscaler")}
    several = 0
    for deployment in of_kind(objs, "Deployment"):
        deployed = deployment["metadata"]["name"]
        hpa = hpas.get(deployed)
        most = max(deployment["spec"]["replicas"], hpa["spec"]["maxReplicas"] if hpa else 0)
        if most <= 1:
            continue
        several += 1
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= labels.items()]
        assert len(covering) == 1, deployed
        assert covering[0]["spec"]["maxUnavailable"] == 1  # never blocks a drain, even at one replica
    assert several == (0 if name == "dev" else 2)  # web and the worker; one of each in dev


def test_the_web_autoscaler_scales_on_cpu_and_request_latency(overlay):
    name, objs = overlay
    hpas = of_kind(objs, "HorizontalPodAutoscaler")
    if name == "dev":
        assert hpas == []
        return
    (hpa,) = hpas
    kinds = {m["type"]: m for m in hpa["spec"]["metrics"]}
    assert kinds["Resource"]["resource"]["name"] == "cpu"
    assert kinds["Pods"]["pods"]["metric"]["name"] == "ladder_http_request_duration_seconds_p95"
    assert hpa["spec"]["minReplicas"] >= 2


def test_the_migration_job_runs_before_a_sync(overlay):
    _, objs = overlay
    (job,) = of_kind(objs, "Job")
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"
    assert "pre-upgrade" in job["metadata"]["annotations"]["helm.sh/hook"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_network_policies_deny_by_default_then_allow_what_each_part_needs(overlay):
    _, objs = overlay
    policies = {p["metadata"]["name"]: p["spec"] for p in of_kind(objs, "NetworkPolicy")}
    deny = policies["ladder-default-deny"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    ports = {
        (rule_port["protocol"], rule_port["port"])
        for spec in policies.values()
        for rule in spec.get("egress") or []
        for rule_port in rule["ports"]
    }
    assert {("UDP", 53), ("TCP", 5432), ("TCP", 6379), ("TCP", 443), ("TCP", 6443)} <= ports
    # Only the web pods take connections: from the ingress controller (gunicorn and nginx), from Prometheus (gunicorn).
    ingress = {
        (source["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"], port["port"])
        for spec in policies.values()
        for rule in spec.get("ingress") or []
        for source in rule["from"]
        for port in rule["ports"]
    }
    assert ingress == {("ingress-nginx", 8000), ("ingress-nginx", 8080), ("monitoring", 8000)}
    for spec in policies.values():
        if spec.get("ingress"):
            assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "web"


def test_no_secret_value_is_rendered(overlay):
    _, objs = overlay
    assert of_kind(objs, "Secret") == []
    text = yaml.safe_dump_all(objs)
    assert not SECRET_LOOKS.search(text)
    for config in of_kind(objs, "ConfigMap"):
        assert not SECRET_NAMES & set(config.get("data") or {}), config["metadata"]["name"]
    for _, container in ladder_containers(objs):
        for entry in container.get("env") or []:
            if entry["name"] in SECRET_NAMES:
                assert "value" not in entry, entry["name"]
                assert "secretKeyRef" in entry["valueFrom"], entry["name"]
        refs = [source["secretRef"]["name"] for source in container.get("envFrom") or [] if "secretRef" in source]
        assert refs == ["ladder-secrets"] or container["name"] == "static-copy"


def test_the_config_names_only_settings_ladder_reads(overlay):
    _, objs = overlay
    known = set(first_column(section("Settings")))
    for config in of_kind(objs, "ConfigMap"):
        if config["metadata"]["name"].startswith("ladder-config-"):
            assert set(config["data"]) <= known, set(config["data"]) - known
    assert SECRET_NAMES - {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= known


def test_the_secret_keys_are_documented():
    doc = (ROOT / "docs" / "operations.md").read_text()
    installing = doc[doc.index("\n## Installing\n") :]
    installing = installing[: installing.find("\n## ", 1)] if "\n## " in installing[1:] else installing
    table = installing[installing.index("### The Secret") :]
    assert set(re.findall(r"^\| `([A-Z0-9_]+)`", table, flags=re.MULTILINE)) == SECRET_NAMES


def test_the_tenant_rbac_kustomization_renders_what_the_provisioner_needs():
    objs = render("tenant-rbac")
    validate_all(objs)
    assert {(o["kind"], o["metadata"]["name"]) for o in objs} >= {
        ("ServiceAccount", "ladder"),
        ("ClusterRole", "ladder-provisioner"),
        ("ClusterRoleBinding", "ladder-provisioner"),
        ("ClusterRole", "ladder-cluster-setup"),
    }
    assert not (ROOT / "deploy" / "rbac.yaml").exists()


def test_the_migration_job_needs_only_the_shared_objects(overlay):
    """docs/operations.md applies the objects labelled ``shared``, then the Job, before anything else: the Job must
    find there everything it names."""
    _, objs = overlay
    shared = {
        (o["kind"], o["metadata"]["name"])
        for o in objs
        if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "shared"
    }
    (job,) = of_kind(objs, "Job")
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "migrate"
    spec = job["spec"]["template"]["spec"]
    assert ("ServiceAccount", spec["serviceAccountName"]) in shared
    for source in spec["containers"][0]["envFrom"]:
        if "configMapRef" in source:
            assert ("ConfigMap", source["configMapRef"]["name"]) in shared
    assert not [v for v in spec["volumes"] if "persistentVolumeClaim" in v or "configMap" in v]


@pytest.mark.django_db
def test_the_probes_pass_django_with_the_overlays_settings(overlay, client, settings):
    """The kubelet sends the pod's address as Host unless told otherwise; with the overlay's ALLOWED_HOSTS, the
    probes as rendered (path and headers) answer 200 through Django, and a probe without them would not."""
    _, objs = overlay
    (config,) = [c for c in of_kind(objs, "ConfigMap") if c["metadata"]["name"].startswith("ladder-config-")]
    settings.ALLOWED_HOSTS = config["data"]["ALLOWED_HOSTS"].split(",")
    (web,) = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == "ladder-web"]
    (gunicorn,) = [c for c in web["spec"]["template"]["spec"]["containers"] if c["name"] == "web"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = gunicorn[probe]["httpGet"]
        headers = {h["name"]: h["value"] for h in get["httpHeaders"]}
        response = client.get(get["path"], headers=headers)
        assert response.status_code == 200, (probe, response.content)
    assert client.get("/healthz", headers={"Host": "10.1.2.3:8000"}).status_code == 400
