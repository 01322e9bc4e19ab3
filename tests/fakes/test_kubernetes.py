"""The in-memory Kubernetes API server behaves like the API server, seen only through the official client's call_api."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fakes.kubernetes import K8sServer, plural_of
from tests.support import ROOT

TOKEN = "k8s-test-token"
NS = "ladder-acme"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
POD = "/api/v1/namespaces/{namespace}/pods/{name}"
PODS = "/api/v1/namespaces/{namespace}/pods"
DEPLOYMENT = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


@pytest.fixture
def server() -> Iterator[K8sServer]:
    srv = K8sServer(token=TOKEN).start()
    yield srv
    srv.stop()


def api_client(server: K8sServer, token: str | None = TOKEN) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = server.url
    if token is not None:
        cfg.api_key = {"BearerToken": token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.retries = False  # connection errors surface at once instead of after urllib3's three retries
    return client.ApiClient(cfg)


@pytest.fixture
def api(server: K8sServer) -> client.ApiClient:
    return api_client(server)


def call(
    api: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: list[tuple[str, str]] | None = None,
    content_type: str = "application/json",
    **path_params: str,
) -> tuple[Any, int]:
    data, status, _headers = api.call_api(
        path,
        method,
        path_params=path_params,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        response_types_map={200: "object", 201: "object", 202: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=False,
        _preload_content=True,
    )
    return data, status


def apply(
    api: client.ApiClient, path: str, manifest: dict[str, Any], manager: str = "ladder", **path_params: str
) -> Any:
    query = [("fieldManager", manager), ("force", "true")]
    return call(api, "PATCH", path, manifest, query=query, content_type=APPLY, **path_params)[0]


def failure(
    api: client.ApiClient, method: str, path: str, body: Any = None, **kwargs: Any
) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as info:
        call(api, method, path, body, **kwargs)
    return info.value.status, json.loads(info.value.body)


def namespace(api: client.ApiClient, name: str = NS) -> Any:
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    return apply(api, "/api/v1/namespaces/{name}", manifest, name=name)


def pod(name: str, labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": labels or {}}
    if owner is not None:
        ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"]}
        meta["ownerReferences"] = [{**ref, "uid": owner["metadata"]["uid"], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def names(listed: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listed["items"]]


def test_it_creates_then_reapplies_idempotently(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    manifest = pod("ldr-1", {"ladder.io/tenant": "acme"})
    body, status, headers = api.call_api(
        "/api/v1/namespaces/{namespace}/pods/{name}",
        "PATCH",
        path_params={"namespace": NS, "name": "ldr-1"},
        query_params=[("fieldManager", "ladder"), ("force", "true")],
        header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
        body=manifest,
        response_types_map={200: "object", 201: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=False,
        _preload_content=True,
    )
    assert status == 201
    assert headers["Content-Type"] == "application/json"
    meta = body["metadata"]
    assert (body["kind"], body["apiVersion"], meta["generation"]) == ("Pod", "v1", 1)
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert [(e["manager"], e["operation"]) for e in meta["managedFields"]] == [("ladder", "Apply")]
    assert server.requests[-1] == ("PATCH", f"/api/v1/namespaces/{NS}/pods/ldr-1")

    again, status = call(
        api, "PATCH", POD, manifest, query=[("fieldManager", "ladder")], content_type=APPLY, namespace=NS, name="ldr-1"
    )
    assert status == 200
    assert again["metadata"]["generation"] == 1
    assert again["metadata"]["resourceVersion"] == meta["resourceVersion"]  # a no-op apply writes nothing

    manifest["metadata"]["labels"]["tier"] = "gold"
    relabelled = apply(api, POD, manifest, namespace=NS, name="ldr-1")
    assert relabelled["metadata"]["generation"] == 1  # metadata is not spec
    assert int(relabelled["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    manifest["spec"]["containers"][0]["image"] = "i:2"
    changed = apply(api, POD, manifest, namespace=NS, name="ldr-1")
    assert changed["metadata"]["generation"] == 2
    assert int(changed["metadata"]["resourceVersion"]) > int(relabelled["metadata"]["resourceVersion"])
    assert changed["metadata"]["uid"] == meta["uid"]
    assert changed["spec"]["containers"] == [{"name": "c", "image": "i:2"}]


def test_it_rejects_a_yaml_string_body_because_the_client_json_encodes_it(api: client.ApiClient) -> None:
    # rest.py json.dumps()es every body sent as apply-patch+yaml, so a YAML string arrives as one JSON string.
    namespace(api)
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"
    path = "/api/v1/namespaces/{namespace}/configmaps/{name}"
    query = [("fieldManager", "ladder")]
    code, status = failure(api, "PATCH", path, manifest, query=query, content_type=APPLY, namespace=NS, name="settings")
    assert (code, status["reason"]) == (400, "BadRequest")
    body, code = call(
        api, "PATCH", path, yaml.safe_load(manifest), query=query, content_type=APPLY, namespace=NS, name="settings"
    )
    assert (code, body["data"], body["metadata"]["namespace"]) == (201, {"mode": "fast"}, NS)


def test_it_keeps_fields_other_managers_set(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    mine = deployment("web", replicas=2, paused=False)
    mine["metadata"]["labels"] = {"app": "web"}
    apply(api, DEPLOYMENT, mine, namespace=NS, name="web")
    theirs = deployment("web", minReadySeconds=5)
    theirs["metadata"]["labels"] = {"owner": "ops"}
    apply(api, DEPLOYMENT, theirs, "ops", namespace=NS, name="web")
    patch = {"metadata": {"annotations": {"note": "hand-edited"}}}
    call(
        api,
        "PATCH",
        DEPLOYMENT,
        patch,
        content_type=MERGE,
        query=[("fieldManager", "kubectl")],
        namespace=NS,
        name="web",
    )

    del mine["spec"]["paused"]
    body = apply(api, DEPLOYMENT, mine, namespace=NS, name="web")
    assert body["spec"] == {"replicas": 2, "minReadySeconds": 5}  # ladder dropped paused; ops' field survives
    assert body["metadata"]["labels"] == {"app": "web", "owner": "ops"}
    assert body["metadata"]["annotations"] == {"note": "hand-edited"}
    managers = {(e["manager"], e["operation"]) for e in body["metadata"]["managedFields"]}
    assert managers == {("ladder", "Apply"), ("ops", "Apply"), ("kubectl", "Update")}

    clash = deployment("web", replicas=9)
    code, status = failure(
        api, "PATCH", DEPLOYMENT, clash, query=[("fieldManager", "ops")], content_type=APPLY, namespace=NS, name="web"
    )
    assert (code, status["reason"]) == (409, "Conflict")
    assert 'conflict with "ladder": .spec.replicas' in status["message"]
    forced = apply(api, DEPLOYMENT, clash, "ops", namespace=NS, name="web")
    assert forced["spec"]["replicas"] == 9  # force wins
    again = apply(api, DEPLOYMENT, clash, "ops", namespace=NS, name="web")
    assert again["metadata"]["resourceVersion"] == forced["metadata"]["resourceVersion"]


def test_it_preserves_status_across_apply(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    created = apply(api, DEPLOYMENT, deployment("web", replicas=1), namespace=NS, name="web")
    status_path = DEPLOYMENT + "/status"
    patched, code = call(
        api, "PATCH", status_path, {"status": {"readyReplicas": 1}}, content_type=MERGE, namespace=NS, name="web"
    )
    assert (code, patched["status"]) == (200, {"readyReplicas": 1})
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]

    manifest = {**deployment("web", replicas=3), "status": {"readyReplicas": 99}}
    body = apply(api, DEPLOYMENT, manifest, namespace=NS, name="web")
    assert body["status"] == {"readyReplicas": 1}  # status changes only through /status
    assert body["spec"]["replicas"] == 3
    server.set_status("apps/v1", "deployments", "web", NS, {"readyReplicas": 3})
    assert call(api, "GET", DEPLOYMENT, namespace=NS, name="web")[0]["status"] == {"readyReplicas": 3}


def test_it_requires_a_field_manager_to_apply(api: client.ApiClient) -> None:
    namespace(api)
    code, status = failure(api, "PATCH", POD, pod("p"), content_type=APPLY, namespace=NS, name="p")
    assert (code, status["reason"]) == (422, "Invalid")
    assert "fieldManager" in status["message"]


def test_it_validates_what_it_is_given(api: client.ApiClient) -> None:
    namespace(api)
    code, status = failure(
        api, "PATCH", POD, pod("other"), query=[("fieldManager", "x")], content_type=APPLY, namespace=NS, name="p"
    )
    assert (code, status["reason"]) == (400, "BadRequest")
    code, _ = failure(api, "POST", "/apis/apps/v1/namespaces/{namespace}/deployments", pod("p"), namespace=NS)
    assert code == 400  # apiVersion v1 sent to apps/v1
    code, status = failure(api, "POST", PODS, pod("Not_A_Name"), namespace=NS)
    assert (code, status["reason"]) == (422, "Invalid")
    code, status = failure(api, "POST", PODS, pod("p", {"tenant": "has spaces"}), namespace=NS)
    assert (code, status["reason"]) == (422, "Invalid")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("ladder.io/tenant=acme", ["a1", "a2"]),
        ("ladder.io/tenant==acme,tier=gold", ["a1"]),
        ("tier!=gold", ["a2", "b1", "n1"]),
        ("ladder.io/tenant in (acme,beta)", ["a1", "a2", "b1"]),
        ("ladder.io/tenant notin (acme)", ["b1", "n1"]),
        ("tier", ["a1", "b1"]),
        ("!tier", ["a2", "n1"]),
        ("ladder.io/tenant in (acme), !tier", ["a2"]),
        ("", ["a1", "a2", "b1", "n1"]),
    ],
)
def test_it_lists_with_label_selectors(api: client.ApiClient, selector: str, expected: list[str]) -> None:
    namespace(api)
    for name, labels in [
        ("a1", {"ladder.io/tenant": "acme", "tier": "gold"}),
        ("a2", {"ladder.io/tenant": "acme"}),
        ("b1", {"ladder.io/tenant": "beta", "tier": "silver"}),
        ("n1", {}),
    ]:
        call(api, "POST", PODS, pod(name, labels), namespace=NS)
    listed, _ = call(api, "GET", PODS, query=[("labelSelector", selector)], namespace=NS)
    assert names(listed) == expected
    assert listed["kind"] == "PodList"
    assert int(listed["metadata"]["resourceVersion"]) >= 5


def test_it_lists_with_field_selectors_and_across_namespaces(api: client.ApiClient) -> None:
    namespace(api)
    namespace(api, "ladder-beta")
    call(api, "POST", PODS, pod("a1"), namespace=NS)
    call(api, "POST", PODS, {**pod("b1"), "metadata": {"name": "b1"}}, namespace="ladder-beta")
    everywhere, _ = call(api, "GET", "/api/v1/pods")
    assert names(everywhere) == ["a1", "b1"]
    assert [i["metadata"]["namespace"] for i in everywhere["items"]] == [NS, "ladder-beta"]
    by_ns, _ = call(api, "GET", "/api/v1/pods", query=[("fieldSelector", "metadata.namespace=ladder-beta")])
    assert names(by_ns) == ["b1"]
    by_name, _ = call(api, "GET", PODS, query=[("fieldSelector", "metadata.name!=a1")], namespace=NS)
    assert names(by_name) == []
    code, status = failure(api, "GET", PODS, query=[("labelSelector", "a in (x")], namespace=NS)
    assert (code, status["reason"]) == (400, "BadRequest")


def test_it_rejects_a_stale_replace(api: client.ApiClient) -> None:
    namespace(api)
    created, code = call(api, "POST", PODS, pod("p"), namespace=NS)
    assert code == 201
    fresh = {**created, "metadata": {**created["metadata"], "labels": {"v": "2"}}}
    replaced, code = call(api, "PUT", POD, fresh, namespace=NS, name="p")
    assert code == 200
    assert replaced["metadata"]["labels"] == {"v": "2"}
    code, status = failure(api, "PUT", POD, fresh, namespace=NS, name="p")  # still carries the old resourceVersion
    assert (code, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]


def test_it_refuses_to_create_twice(api: client.ApiClient) -> None:
    namespace(api)
    call(api, "POST", PODS, pod("p"), namespace=NS)
    code, status = failure(api, "POST", PODS, pod("p"), namespace=NS)
    assert (code, status["reason"], status["kind"], status["status"]) == (409, "AlreadyExists", "Status", "Failure")
    assert status["message"] == 'pods "p" already exists'


def test_it_answers_404_for_a_missing_object(api: client.ApiClient) -> None:
    namespace(api)
    with pytest.raises(client.exceptions.NotFoundException) as info:
        call(api, "GET", POD, namespace=NS, name="nope")
    assert info.value.status == 404
    status = json.loads(info.value.body)
    assert (status["reason"], status["message"], status["code"]) == ("NotFound", 'pods "nope" not found', 404)
    _code, status = failure(api, "GET", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/{name}", name="nope")
    assert status["message"] == 'clusterqueues.kueue.x-k8s.io "nope" not found'


def test_it_needs_the_namespace_to_exist(api: client.ApiClient) -> None:
    code, status = failure(
        api, "PATCH", POD, pod("p"), query=[("fieldManager", "ladder")], content_type=APPLY, namespace=NS, name="p"
    )
    assert (code, status["reason"], status["details"]["kind"]) == (404, "NotFound", "namespaces")
    assert status["message"] == f'namespaces "{NS}" not found'


def test_it_deletes_in_the_foreground_at_tick(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    owner = apply(api, DEPLOYMENT, deployment("web", replicas=2), namespace=NS, name="web")
    for name in ("web-1", "web-2"):
        call(api, "POST", PODS, pod(name, owner=owner), namespace=NS)
    call(api, "POST", PODS, pod("bystander"), namespace=NS)

    body, code = call(api, "DELETE", DEPLOYMENT, {"propagationPolicy": "Foreground"}, namespace=NS, name="web")
    assert code == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert body["metadata"]["deletionTimestamp"]
    assert call(api, "GET", DEPLOYMENT, namespace=NS, name="web")[0]["metadata"]["deletionTimestamp"]
    assert len(server.objects("Pod", NS)) == 3

    server.tick()
    assert server.get_object("apps/v1", "Deployment", "web", NS) is None
    assert [p["metadata"]["name"] for p in server.objects("pods", NS)] == ["bystander"]
    failure(api, "GET", DEPLOYMENT, namespace=NS, name="web")


def test_it_deletes_in_the_background_or_orphans(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    owner = apply(api, DEPLOYMENT, deployment("web"), namespace=NS, name="web")
    call(api, "POST", PODS, pod("web-1", owner=owner), namespace=NS)
    body, code = call(api, "DELETE", DEPLOYMENT, {"propagationPolicy": "Background"}, namespace=NS, name="web")
    assert (code, body["kind"], body["status"], body["details"]["name"]) == (200, "Status", "Success", "web")
    assert server.objects(namespace=NS) == []

    owner = apply(api, DEPLOYMENT, deployment("web"), namespace=NS, name="web")
    call(api, "POST", PODS, pod("web-1", owner=owner), namespace=NS)
    call(api, "DELETE", DEPLOYMENT, {"propagationPolicy": "Orphan"}, namespace=NS, name="web")
    orphan = server.get_object("v1", "pods", "web-1", NS)
    assert orphan is not None
    assert orphan["metadata"]["ownerReferences"] == []
    code, status = failure(api, "DELETE", POD, {"preconditions": {"uid": "someone-else"}}, namespace=NS, name="web-1")
    assert (code, status["reason"]) == (409, "Conflict")


def test_it_waits_for_finalizers(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    held = pod("held")
    held["metadata"]["finalizers"] = ["ladder.io/cleanup"]
    call(api, "POST", PODS, held, namespace=NS)
    body, _ = call(api, "DELETE", POD, namespace=NS, name="held")
    assert body["metadata"]["deletionTimestamp"]
    server.tick()
    assert server.get_object("v1", "Pod", "held", NS) is not None
    call(api, "PATCH", POD, {"metadata": {"finalizers": None}}, content_type=MERGE, namespace=NS, name="held")
    assert server.get_object("v1", "Pod", "held", NS) is None


CLAIM = "/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"


def claim(size: str, storage_class: str = "expandable", **extra: Any) -> dict[str, Any]:
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class, **extra}
    spec["resources"] = {"requests": {"storage": size}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": NS},
        "spec": spec,
    }


def test_it_guards_claims_as_the_api_server_does(server: K8sServer, api: client.ApiClient) -> None:
    """A claim gets the in-use protection finalizer; only its requested storage changes after creation, never
    downwards, upwards only through a class that allows expansion; deleted, it goes once no pod uses it."""
    namespace(api)
    classes = {"expandable": True, "fixed": False}
    for name, expands in classes.items():
        server.put_object(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": "cephfs.csi.ceph.com",
                "allowVolumeExpansion": expands,
            }
        )
    made = apply(api, CLAIM, claim("10Gi"), namespace=NS, name="data")
    assert made["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    status, body = failure(
        api,
        "PATCH",
        CLAIM,
        claim("20Gi"),
        query=[("fieldManager", "ladder")],
        content_type=APPLY,
        namespace=NS,
        name="data",
    )
    assert status == 422, body  # not bound yet: its request cannot change
    server.set_status("v1", "persistentvolumeclaims", "data", NS, {"phase": "Bound"})
    grown = apply(api, CLAIM, claim("20Gi"), namespace=NS, name="data")
    assert grown["spec"]["resources"]["requests"]["storage"] == "20Gi"
    status, body = failure(
        api,
        "PATCH",
        CLAIM,
        claim("5Gi"),
        query=[("fieldManager", "ladder")],
        content_type=APPLY,
        namespace=NS,
        name="data",
    )
    assert (status, body["reason"]) == (422, "Invalid")
    assert "can not be less than previous value" in body["message"]
    status, body = failure(
        api,
        "PATCH",
        CLAIM,
        claim("20Gi", volumeMode="Block"),
        query=[("fieldManager", "ladder")],
        content_type=APPLY,
        namespace=NS,
        name="data",
    )
    assert status == 422
    assert "immutable after creation" in body["message"]

    fixed = claim("1Gi", "fixed")
    fixed["metadata"]["name"] = "fixed"
    apply(api, CLAIM, fixed, namespace=NS, name="fixed")
    server.set_status("v1", "persistentvolumeclaims", "fixed", NS, {"phase": "Bound"})
    fixed["spec"]["resources"]["requests"]["storage"] = "2Gi"
    status, body = failure(
        api, "PATCH", CLAIM, fixed, query=[("fieldManager", "ladder")], content_type=APPLY, namespace=NS, name="fixed"
    )
    assert (status, body["reason"]) == (403, "Forbidden")
    assert "must support resize" in body["message"]

    user = pod("user")
    user["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    call(api, "POST", PODS, user, namespace=NS)
    call(api, "DELETE", CLAIM, namespace=NS, name="data")
    server.tick()
    assert server.get_object("v1", "PersistentVolumeClaim", "data", NS) is not None  # a pod still uses it
    call(api, "DELETE", POD, namespace=NS, name="user")
    server.tick()
    assert server.get_object("v1", "PersistentVolumeClaim", "data", NS) is None


def test_it_cascades_namespace_deletion(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    namespace(api, "ladder-beta")
    apply(api, DEPLOYMENT, deployment("web"), namespace=NS, name="web")
    call(api, "POST", PODS, pod("p"), namespace=NS)
    call(api, "POST", PODS, {**pod("q"), "metadata": {"name": "q"}}, namespace="ladder-beta")

    body, code = call(api, "DELETE", "/api/v1/namespaces/{name}", name=NS)
    assert (code, body["status"]["phase"]) == (200, "Terminating")
    code, status = failure(api, "POST", PODS, pod("late"), namespace=NS)
    assert (code, status["reason"]) == (403, "Forbidden")

    server.tick()
    assert server.objects(namespace=NS) == []
    assert server.get_object("v1", "Namespace", NS) is None
    assert [o["metadata"]["name"] for o in server.objects(namespace="ladder-beta")] == ["q"]


def test_it_serves_cluster_scoped_kinds(server: K8sServer, api: client.ApiClient) -> None:
    server.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"}, "status": {"capacity": {}}})
    node, _ = call(api, "GET", "/api/v1/nodes/{name}", name="gpu-1")
    assert "namespace" not in node["metadata"]
    taints = {"spec": {"taints": [{"key": "ladder.io/tenant", "value": "acme", "effect": "NoSchedule"}]}}
    ctype = "application/strategic-merge-patch+json"
    patched, _ = call(api, "PATCH", "/api/v1/nodes/{name}", taints, content_type=ctype, name="gpu-1")
    assert patched["spec"]["taints"][0]["value"] == "acme"
    assert patched["status"] == {"capacity": {}}
    assert names(call(api, "GET", "/api/v1/nodes")[0]) == ["gpu-1"]
    code, _ = failure(api, "GET", "/api/v1/namespaces/{namespace}/nodes/{name}", namespace=NS, name="gpu-1")
    assert code == 404

    path = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/{name}"
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "acme", "namespace": "ignored"},
        "spec": {"namespaceSelector": {}, "resourceGroups": []},
    }
    body = apply(api, path, queue, name="acme")
    assert "namespace" not in body["metadata"]
    assert server.get_object("kueue.x-k8s.io/v1beta1", "ClusterQueue", "acme") is not None
    listed, _ = call(api, "GET", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues")
    assert (listed["kind"], names(listed)) == ("ClusterQueueList", ["acme"])


@pytest.mark.parametrize(
    ("api_version", "kind", "plural", "spec"),
    [
        ("kueue.x-k8s.io/v1beta1", "LocalQueue", "localqueues", {"clusterQueue": "acme"}),
        ("kubevirt.io/v1", "VirtualMachine", "virtualmachines", {"runStrategy": "Always"}),
        ("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", {"spec": {"devices": {}}}),
    ],
)
def test_it_serves_custom_resource_groups(
    server: K8sServer, api: client.ApiClient, api_version: str, kind: str, plural: str, spec: dict[str, Any]
) -> None:
    namespace(api)
    group, version = api_version.split("/")
    path = f"/apis/{group}/{version}/namespaces/{{namespace}}/{plural}/{{name}}"
    manifest = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x1", "labels": {"t": "acme"}}}
    body = apply(api, path, {**manifest, "spec": spec}, namespace=NS, name="x1")
    assert (body["kind"], body["apiVersion"], body["spec"]) == (kind, api_version, spec)
    listed, _ = call(api, "GET", path.rsplit("/", 1)[0], query=[("labelSelector", "t=acme")], namespace=NS)
    assert (listed["kind"], names(listed)) == (f"{kind}List", ["x1"])
    assert names(call(api, "GET", f"/apis/{group}/{version}/{plural}")[0]) == ["x1"]
    assert plural_of(kind) == plural
    assert [o["metadata"]["name"] for o in server.objects(kind, NS, {"t": "acme"})] == ["x1"]
    assert server.get_object(api_version, plural, "x1", NS) == server.get_object(api_version, kind, "x1", NS)


def test_it_dry_runs_generates_names_and_deletes_collections(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    query = [("fieldManager", "ladder"), ("dryRun", "All")]
    body, code = call(api, "PATCH", POD, pod("p"), query=query, content_type=APPLY, namespace=NS, name="p")
    assert (code, body["metadata"]["name"]) == (201, "p")
    assert server.objects("Pod") == []
    generated = {**pod(""), "metadata": {"generateName": "job-", "labels": {"batch": "1"}}}
    body, _ = call(api, "POST", PODS, generated, namespace=NS)
    assert re.fullmatch(r"job-[a-z0-9]{5}", body["metadata"]["name"])
    call(api, "POST", PODS, pod("keep"), namespace=NS)
    deleted, _ = call(api, "DELETE", PODS, query=[("labelSelector", "batch=1")], namespace=NS)
    assert names(deleted) == [body["metadata"]["name"]]
    assert [p["metadata"]["name"] for p in server.objects("Pod")] == ["keep"]


def test_it_rejects_a_missing_or_wrong_token(server: K8sServer) -> None:
    for token in (None, "wrong"):
        with pytest.raises(client.exceptions.UnauthorizedException) as info:
            call(api_client(server, token), "GET", "/api/v1/namespaces")
        assert info.value.status == 401
        assert json.loads(info.value.body)["reason"] == "Unauthorized"
    legacy = client.Configuration()
    legacy.host = server.url
    legacy.api_key = {"authorization": f"Bearer {TOKEN}"}  # the pre-36 spelling still works
    assert call(client.ApiClient(legacy), "GET", "/api/v1/namespaces")[1] == 200

    open_server = K8sServer().start()
    try:
        assert call(api_client(open_server, None), "GET", "/api/v1/namespaces")[0]["items"] == []
    finally:
        open_server.stop()


def test_it_injects_outages_and_failures(server: K8sServer, api: client.ApiClient) -> None:
    server.down = True
    with pytest.raises(client.exceptions.ServiceException) as info:
        call(api, "GET", "/api/v1/namespaces")
    assert info.value.status == 503
    assert json.loads(info.value.body)["reason"] == "ServiceUnavailable"
    server.down = False

    server.fail_next = [500, 429]
    codes = []
    for _ in range(3):
        try:
            codes.append(call(api, "GET", "/api/v1/namespaces")[1])
        except ApiException as exc:
            codes.append(exc.status)
    assert codes == [500, 429, 200]
    assert server.requests[-3:] == [("GET", "/api/v1/namespaces")] * 3


def test_it_refuses_connections_until_started_again(server: K8sServer, api: client.ApiClient) -> None:
    namespace(api)
    server.refuse_connections = True
    with pytest.raises(urllib3.exceptions.HTTPError):
        call(api, "GET", "/api/v1/namespaces")
    server.refuse_connections = False
    assert names(call(api, "GET", "/api/v1/namespaces")[0]) == [NS]  # same url, state kept


def test_it_has_direct_helpers(server: K8sServer) -> None:
    created = server.put_object(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS}, "status": {"phase": "Running"}}
    )
    assert created["metadata"]["resourceVersion"]
    assert created["status"] == {"phase": "Running"}
    server.set_status("v1", "pods", "p", NS, {"phase": "Succeeded"})
    stored = server.get_object("v1", "pods", "p", NS)
    assert stored is not None
    assert stored["status"] == {"phase": "Succeeded"}
    assert server.objects("Pod") == [stored]
    assert server.objects("Pod", "elsewhere") == []
    assert server.delete_object("v1", "Pod", "p", NS)
    assert not server.delete_object("v1", "Pod", "p", NS)
    assert [plural_of(k) for k in ("NetworkPolicy", "Topology", "RuntimeClass", "Endpoints", "pods")] == [
        "networkpolicies",
        "topologies",
        "runtimeclasses",
        "endpoints",
        "pods",
    ]


def test_it_runs_as_a_standalone_process() -> None:
    root = ROOT
    command = [sys.executable, "-m", "tests.fakes.kubernetes", "--port", "0", "--token", TOKEN]
    proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[4]
        cfg = client.Configuration()
        cfg.host = url
        cfg.api_key = {"BearerToken": TOKEN}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        assert call(client.ApiClient(cfg), "GET", "/api/v1/namespaces")[0]["kind"] == "NamespaceList"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
