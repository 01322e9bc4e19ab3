"""An in-memory Kubernetes API server for tests and benchmarks.

It speaks the API server's REST conventions generically for any group, version and plural (``/api/v1/...`` and
``/apis/{group}/{version}/...``, namespaced or cluster-scoped, with the ``status`` subresource), so product code is
exercised through the official ``kubernetes`` client's ``ApiClient.call_api`` instead of through mocks. It covers
server-side apply (per-manager applied configurations, ``force``, conflicts), merge and strategic-merge patches,
create, replace with optimistic concurrency, label and field selectors, finalizers, deletion with foreground,
background and orphan propagation through ``ownerReferences``, and what the API server does to a
PersistentVolumeClaim (its in-use protection finalizer; only a bound claim's request may change, upwards, through a
StorageClass that allows expansion). Errors are ``Status`` objects, as Kubernetes sends them. A pod's ``log``
subresource answers text from lines a test sets (``set_logs``). Work the real control plane does asynchronously
(finishing foreground and namespace deletion, letting go of a claim no pod uses) happens when a test calls
``tick()``. Outages, scripted failures (``fail_next``, ``fail_on``) and refused connections can be injected.

Run it alone with ``python -m tests.fakes.kubernetes --port 6443 [--token T]``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import re
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, cast
from urllib.parse import parse_qsl, unquote

import yaml

Obj = dict[str, Any]
Key = tuple[str, str, str, str]  # group, plural, namespace ("" when cluster-scoped), name
LogKey = tuple[str, str, str]  # namespace, pod, container

CLUSTER_SCOPED = frozenset(
    {
        *("namespaces", "nodes", "persistentvolumes", "clusterqueues", "resourceflavors", "cohorts", "topologies"),
        *("admissionchecks", "workloadpriorityclasses", "runtimeclasses", "clusterroles", "clusterrolebindings"),
        *("customresourcedefinitions", "deviceclasses", "resourceslices", "storageclasses", "priorityclasses"),
        *("volumesnapshotclasses", "volumesnapshotcontents"),
        *("ingressclasses", "mutatingwebhookconfigurations", "validatingwebhookconfigurations", "apiservices"),
    }
)
IRREGULAR = {"Endpoints": "endpoints", "NetworkAttachmentDefinition": "network-attachment-definitions"}
KINDS = (
    *("Namespace", "Node", "Pod", "Service", "ConfigMap", "Secret", "ServiceAccount", "Event", "Endpoints"),
    *("PersistentVolumeClaim", "PersistentVolume", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"),
    *("NetworkPolicy", "ResourceQuota", "LimitRange", "HorizontalPodAutoscaler", "Ingress", "PriorityClass"),
    *("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "RuntimeClass"),
    *("ResourceClaim", "ResourceClaimTemplate", "DeviceClass", "ResourceSlice", "StorageClass", "Topology"),
    *("LocalQueue", "ClusterQueue", "ResourceFlavor", "Workload", "Cohort", "AdmissionCheck"),
    *("VirtualMachine", "VirtualMachineInstance", "DataVolume"),
    *("NodeSet", "Controller", "LoginSet", "RestApi", "Accounting", "Token"),
    *("MPIJob", "RayJob", "RayCluster"),
    *("NetworkAttachmentDefinition",),
    *("VolumeSnapshot", "VolumeSnapshotContent", "VolumeSnapshotClass"),
    *("ScaledObject",),
)
REASONS = {
    **{400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed"},
    **{409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests"},
    **{500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"},
}
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "deletionTimestamp")
CARRIED_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "managedFields", "generation")
PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
POLICIES = ("Foreground", "Background", "Orphan")
PVC_PROTECTION = "kubernetes.io/pvc-protection"  # the StorageObjectInUseProtection admission plugin's finalizer
SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
REQUIREMENT = re.compile(
    r"\s*(?:!\s*(?P<absent>[\w./-]+)|(?P<skey>[\w./-]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)"
    r"|(?P<ekey>[\w./-]+)\s*(?P<eq>==|=|!=)\s*(?P<value>[\w.-]*)|(?P<present>[\w./-]+))\s*"
)


def plural_of(kind_or_plural: str) -> str:
    """The resource name for a kind (``NetworkPolicy`` -> ``networkpolicies``); a lower-case word is taken as one."""
    if kind_or_plural in IRREGULAR or kind_or_plural.islower():
        return IRREGULAR.get(kind_or_plural, kind_or_plural)
    word = kind_or_plural.lower()
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    return word + ("es" if re.search(r"(s|x|z|ch|sh)$", word) else "s")


KIND_OF = {plural_of(kind): kind for kind in KINDS}


def status_body(code: int, message: str, reason: str, details: Obj | None = None) -> Obj:
    body: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    body.update(reason=reason, code=code)
    if details:
        body["details"] = details
    return body


class K8sError(Exception):
    """A failure rendered as a ``Status``; the client raises ``ApiException`` with ``status == code``."""

    def __init__(self, code: int, message: str, reason: str | None = None, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.body = status_body(code, message, reason or REASONS.get(code, "Unknown"), details)


class Target(NamedTuple):
    """What a request path names."""

    group: str
    version: str
    plural: str
    namespace: str
    name: str
    subresource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> Key:
        return (self.group, self.plural, self.namespace, self.name)

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def details(self) -> Obj:
        return {"name": self.name, "group": self.group, "kind": self.plural}

    def not_found(self) -> K8sError:
        return K8sError(404, f'{self.resource} "{self.name}" not found', details=self.details)

    def conflict(self, why: str) -> K8sError:
        message = f'Operation cannot be fulfilled on {self.resource} "{self.name}": {why}'
        return K8sError(409, message, details=self.details)

    def check_version(self, old: Obj | None, version: str | None) -> None:
        """Optimistic concurrency: a resourceVersion in the body must be the stored one."""
        if version and old is not None and version != old["metadata"]["resourceVersion"]:
            raise self.conflict("the object has been modified; please apply your changes to the latest version")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` removes a key, anything else (lists included) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def prune(target: Obj, before: Obj, after: Obj, others: list[Obj]) -> None:
    """Remove what a manager applied before but applies no longer, unless another applier also applies it."""
    for key, value in before.items():
        if key not in target:
            continue
        if key in after:
            if isinstance(value, dict) and isinstance(after[key], dict) and isinstance(target[key], dict):
                prune(target[key], value, after[key], [o[key] for o in others if isinstance(o.get(key), dict)])
        elif not any(key in other for other in others):
            del target[key]


def leaves(node: Obj, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    out: dict[tuple[str, ...], Any] = {}
    for key, value in node.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, (*prefix, key)))
        else:
            out[(*prefix, key)] = value
    return out


def qualified_name(key: str) -> bool:
    """A label or annotation key: an optional DNS subdomain prefix and a slash, then a name of up to 63 characters."""
    prefix, _, name = key.rpartition("/")
    return bool(LABEL_NAME.fullmatch(name) and len(name) <= 63 and (not prefix or SUBDOMAIN.fullmatch(prefix)))


def fields_v1(node: Obj) -> Obj:
    return {f"f:{k}": fields_v1(v) if isinstance(v, dict) else {} for k, v in node.items()}


def label_matcher(selector: str) -> Callable[[dict[str, str]], bool]:
    """Equality (``a=b``, ``a==b``, ``a!=b``), set (``a in (x,y)``, ``a notin (x)``) and existence (``a``, ``!a``)."""
    terms = re.findall(r"(?:[^,(]|\([^)]*\))+", selector)
    if ",".join(terms) != selector:
        raise K8sError(400, f"unable to parse label selector {selector!r}")
    requirements: list[tuple[str, str, frozenset[str]]] = []
    for term in terms:
        m = REQUIREMENT.fullmatch(term)
        if not m:
            raise K8sError(400, f"unable to parse requirement: {term.strip()!r} in label selector {selector!r}")
        if m["absent"] or m["present"]:
            requirements.append(("!" if m["absent"] else "", m["absent"] or m["present"], frozenset()))
        elif m["skey"]:
            requirements.append((m["op"], m["skey"], frozenset(v.strip() for v in m["values"].split(","))))
        else:
            requirements.append(("notin" if m["eq"] == "!=" else "in", m["ekey"], frozenset({m["value"]})))
    tests: dict[str, Callable[[dict[str, str], str, frozenset[str]], bool]] = {
        "": lambda labels, key, _: key in labels,
        "!": lambda labels, key, _: key not in labels,
        "in": lambda labels, key, values: labels.get(key) in values,
        "notin": lambda labels, key, values: labels.get(key) not in values,
    }
    return lambda labels: all(tests[op](labels, key, values) for op, key, values in requirements)


def field_matcher(selector: str) -> Callable[[Obj], bool]:
    """``path=value``, ``path==value`` and ``path!=value`` on any dotted path, e.g. ``metadata.name=x``."""
    requirements: list[tuple[list[str], bool, str]] = []
    for term in filter(None, (t.strip() for t in selector.split(","))):
        m = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise K8sError(400, f"invalid field selector: {term!r}")
        requirements.append((m[1].split("."), m[2] == "!=", m[3].strip()))

    def lookup(obj: Any, path: list[str]) -> str:
        for part in path:
            obj = obj.get(part) if isinstance(obj, dict) else None
        return "" if obj is None else str(obj).lower() if isinstance(obj, bool) else str(obj)

    return lambda obj: all((lookup(obj, path) == value) != negate for path, negate, value in requirements)


class K8sServer:
    """Stateful fake of the Kubernetes API. Each request runs under one lock, so any number of clients may share it."""

    def __init__(
        self,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        cluster_scoped: Iterable[str] = CLUSTER_SCOPED,
    ) -> None:
        self.token = token
        self.down = False
        self.fail_next: list[int] = []
        self.fail_on: dict[str, int] = {}  # a pattern searched in each request's path -> the status it answers
        self.requests: list[tuple[str, str]] = []
        self.clock: Callable[[], float] = time.time
        self.cluster_scoped = set(cluster_scoped)
        self._lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._applied: dict[Key, dict[str, Obj]] = {}  # per object: manager -> the configuration it last applied
        self._kinds: dict[tuple[str, str], str] = {}
        self._logs: dict[LogKey, list[tuple[datetime, str]]] = {}
        self._rv = 0
        self._host = host
        self._httpd = _HTTPServer((host, port), _Handler, self)
        self._port = self._httpd.server_address[1]
        self.url = f"http://{host}:{self._port}"
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> K8sServer:
        """Serve in a thread; after ``stop()`` this listens again on the same port, so ``url`` stays valid."""
        if self._closed:
            self._httpd = _HTTPServer((self._host, self._port), _Handler, self)
            self._closed = False
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, name="k8s-server", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        """Close the listening socket and every open connection: clients get connection errors until ``start()``."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        for conn in list(self._httpd.connections):  # keep-alive connections would otherwise still be answered
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._closed = True

    @property
    def refuse_connections(self) -> bool:
        return self._closed

    @refuse_connections.setter
    def refuse_connections(self, refuse: bool) -> None:
        if refuse and not self._closed:
            self.stop()
        elif not refuse and self._closed:
            self.start()

    # --- direct access for tests (no HTTP, no validation) ---------------------------------------------------

    def put_object(self, obj: Obj) -> Obj:
        """Create or replace an object as given, status included; server fields are filled in."""
        with self._lock:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            key = self._key(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            if not key[2]:
                if key[1] not in self.cluster_scoped:
                    raise ValueError(f"a namespaced {obj['kind']} needs metadata.namespace")
                meta.pop("namespace", None)
            old = self._objects.get(key)
            if old is None:
                self._applied.pop(key, None)
            return copy.deepcopy(self._save(key, old, obj, "test", "Update", obj))

    def get_object(self, api_version: str, kind_or_plural: str, name: str, namespace: str | None = None) -> Obj | None:
        with self._lock:
            obj = self._objects.get(self._key(api_version, kind_or_plural, name, namespace))
            return copy.deepcopy(obj)

    def objects(
        self, kind: str | None = None, namespace: str | None = None, labels: dict[str, str] | None = None
    ) -> list[Obj]:
        """Stored objects, by namespace and name; ``kind`` may be a kind (``Pod``) or a plural (``pods``)."""
        with self._lock:
            return [
                copy.deepcopy(obj)
                for (_, plural, ns, _), obj in sorted(self._objects.items())
                if kind in (None, obj.get("kind"), plural)
                and namespace in (None, ns)
                and all((obj["metadata"].get("labels") or {}).get(k) == v for k, v in (labels or {}).items())
            ]

    def set_logs(self, namespace: str, pod: str, container: str, lines: Iterable[tuple[datetime | str, str]]) -> None:
        """What a pod's container has written, as ``(time, text)`` in the order written (the times are aware
        datetimes or RFC 3339 strings). A container in the pod's spec whose logs were never set has not started: its
        log answers 400, as the kubelet's does. A deleted pod's logs go with it."""
        written = []
        for at, text in lines:
            when = datetime.fromisoformat(at) if isinstance(at, str) else at
            if when.tzinfo is None:
                raise ValueError(f"{at!r}: a log line's time needs a zone")
            written.append((when.astimezone(UTC), text))
        with self._lock:
            self._logs[(namespace, pod, container)] = written

    def set_status(self, api_version: str, plural: str, name: str, namespace: str | None, status: Obj) -> Obj:
        with self._lock:
            key = self._key(api_version, plural, name, namespace)
            if key not in self._objects:
                raise KeyError(key)
            old = self._objects[key]
            new = {**copy.deepcopy(old), "status": copy.deepcopy(status)}
            return copy.deepcopy(self._save(key, old, new, "test", "Update", {"status": status}, "status"))

    def delete_object(
        self,
        api_version: str,
        kind_or_plural: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
    ) -> bool:
        """Delete as the API would, out of band; False when there was no such object."""
        with self._lock:
            key = self._key(api_version, kind_or_plural, name, namespace)
            if key not in self._objects:
                return False
            self._delete_key(key, propagation)
            return True

    def tick(self) -> None:
        """Do what controllers do in the background: finish foreground deletions and terminating namespaces, and
        let a deleted PersistentVolumeClaim go once no pod of its namespace uses it."""
        with self._lock:
            for key in sorted(self._objects):
                obj = self._objects.get(key)
                if obj is None or not obj["metadata"].get("deletionTimestamp"):
                    continue
                if key[:2] == ("", "persistentvolumeclaims") and not self._claim_in_use(key[2], key[3]):
                    finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != PVC_PROTECTION]
                    obj["metadata"]["finalizers"] = finalizers
                if key[:2] == ("", "namespaces"):
                    for inner in [k for k in self._objects if k[2] == key[3]]:
                        self._destroy(inner, "Background")
                    if not any(k[2] == key[3] for k in self._objects):
                        self._destroy(key, "Background")
                elif set(obj["metadata"].get("finalizers") or []) <= {"foregroundDeletion"}:
                    self._destroy(key, "Foreground")

    def _claim_in_use(self, namespace: str, claim: str) -> bool:
        """A pod of the namespace that has not finished names the claim among its volumes."""
        for (group, plural, ns, _), pod in self._objects.items():
            if (group, plural, ns) != ("", "pods", namespace):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            volumes = (pod.get("spec") or {}).get("volumes") or []
            if any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim for v in volumes):
                return True
        return False

    # --- request handling ------------------------------------------------------------------------------------

    def handle(self, method: str, target: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
        """Answer one request with (status, body, content type): JSON, or text for a log; ``headers`` has lower-case
        names."""
        path, _, query = target.partition("?")
        with self._lock:  # held while serialising too, so no other request mutates an object being written out
            self.requests.append((method, unquote(path)))
            try:
                code, answer = self._respond(method, path, query, body, headers)
            except K8sError as err:
                code, answer = err.code, err.body
            except Exception as exc:  # a bug here must reach the client as a 500, not as a dropped connection
                code, answer = 500, status_body(500, repr(exc), "InternalError")
            if isinstance(answer, str):
                return code, answer.encode(), "text/plain"
            return code, json.dumps(answer).encode(), "application/json"

    def _respond(self, method: str, path: str, query: str, raw: bytes, headers: dict[str, str]) -> tuple[int, Any]:
        if self.down:
            raise K8sError(503, "the server is currently unable to handle the request (down=True)")
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            raise K8sError(401, "Unauthorized")
        if self.fail_next:
            code = self.fail_next.pop(0)
            raise K8sError(code, f"injected failure {code} (fail_next)")
        for pattern, code in self.fail_on.items():
            if re.search(pattern, unquote(path)):
                raise K8sError(code, f"injected failure {code} (fail_on {pattern!r})")
        if path == "/version":
            return 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.0", "platform": "linux/amd64"}
        t = self._parse(path)
        params = dict(parse_qsl(query, keep_blank_values=True))
        ctype = headers.get("content-type", "application/json").split(";")[0].strip().lower()
        try:
            data = (yaml.safe_load if "yaml" in ctype else json.loads)(raw.decode()) if raw.strip() else None
        except (ValueError, yaml.YAMLError) as exc:
            raise K8sError(400, f"the body of the request could not be decoded: {exc}") from exc
        manager = params.get("fieldManager") or headers.get("user-agent", "").split("/")[0] or "unknown"
        if not params.get("dryRun"):
            return self._route(method, t, data, ctype, params, manager)
        saved = copy.deepcopy((self._objects, self._applied, self._kinds, self._rv))
        try:
            return self._route(method, t, data, ctype, params, manager)
        finally:
            self._objects, self._applied, self._kinds, self._rv = saved

    def _route(self, method: str, t: Target, data: Any, ctype: str, params: dict[str, str], manager: str) -> Any:
        if t.subresource == "log":
            if method != "GET":
                raise K8sError(405, "the server does not allow this method on the requested resource")
            return 200, self._pod_log(t, params)
        if method == "GET":
            return 200, self._list(t, params) if not t.name else self._get(t)
        if method == "POST" and not t.name:
            return self._create(t, data, manager)
        if method == "PUT" and t.name:
            return self._replace(t, data, manager)
        if method == "PATCH" and t.name:
            return self._patch(t, data, ctype, params, manager)
        if method == "DELETE" and t.name:
            return self._delete(t, data or {}, params)
        if method == "DELETE" and (t.namespace or t.plural in self.cluster_scoped):
            listed = self._list(t, params)
            for item in listed["items"]:
                self._delete_key(t._replace(name=item["metadata"]["name"]).key, "Background")
            return 200, listed
        raise K8sError(405, "the server does not allow this method on the requested resource")

    def _parse(self, path: str) -> Target:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise K8sError(404, "the server could not find the requested resource")
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            namespace, rest = rest[1], rest[2:]
        plural, name, subresource = (*rest, "", "")[:3]
        scoped = plural in self.cluster_scoped
        subresources = ("", "status", "log") if (group, plural) == ("", "pods") else ("", "status")
        if len(rest) > 3 or not plural or subresource not in subresources or (scoped and namespace):
            raise K8sError(404, "the server could not find the requested resource")
        if not scoped and not namespace and name:
            raise K8sError(404, "the server could not find the requested resource")
        return Target(group, version, plural, namespace, name, subresource)

    # --- verbs -----------------------------------------------------------------------------------------------

    def _get(self, t: Target) -> Obj:
        if t.key not in self._objects:
            raise t.not_found()
        return self._objects[t.key]

    def _pod_log(self, t: Target, params: dict[str, str]) -> str:
        """A container's log as the API server relays the kubelet's: ``container`` (optional in a pod of one),
        ``timestamps`` (each line prefixed with its RFC 3339 time and a space), ``sinceTime`` (lines at or after it),
        ``tailLines`` (the last n of those)."""
        spec = self._get(t).get("spec") or {}
        main = [c.get("name") for c in spec.get("containers") or []]
        every = {c.get("name") for part in ("initContainers", "ephemeralContainers") for c in spec.get(part) or []}
        container = params.get("container") or ""
        if not container:
            if len(main) != 1:
                raise K8sError(
                    400, f"a container name must be specified for pod {t.name}, choose one of: [{' '.join(main)}]"
                )
            container = main[0]
        if container not in every | set(main):
            raise K8sError(400, f"container {container} is not valid for pod {t.name}")
        if _flag(params, "follow"):
            raise K8sError(400, "follow is not supported by the fake API server")
        lines = self._logs.get((t.namespace, t.name, container))
        if lines is None:
            raise K8sError(400, f'container "{container}" in pod "{t.name}" is waiting to start: ContainerCreating')
        if params.get("sinceTime"):
            try:
                since = datetime.fromisoformat(params["sinceTime"])
            except ValueError:
                raise K8sError(400, f"sinceTime: invalid RFC 3339 time {params['sinceTime']!r}") from None
            lines = [(at, text) for at, text in lines if at >= since]
        if params.get("tailLines"):
            try:
                tail = int(params["tailLines"])
            except ValueError:
                raise K8sError(400, f"tailLines: not an integer: {params['tailLines']!r}") from None
            lines = lines[max(0, len(lines) - tail) :] if tail >= 0 else lines
        stamps = _flag(params, "timestamps")
        return "".join(f"{_rfc3339_nano(at)} {text}\n" if stamps else f"{text}\n" for at, text in lines)

    def _list(self, t: Target, params: dict[str, str]) -> Obj:
        if params.get("watch") in ("true", "1"):
            raise K8sError(400, "watch is not supported by the fake API server")
        by_labels = label_matcher(params.get("labelSelector", ""))
        by_fields = field_matcher(params.get("fieldSelector", ""))
        items = [
            obj
            for (group, plural, ns, _), obj in sorted(self._objects.items())
            if (group, plural) == (t.group, t.plural)
            and t.namespace in ("", ns)
            and by_labels(obj["metadata"].get("labels") or {})
            and by_fields(obj)
        ]
        meta = {"resourceVersion": str(self._rv)}
        return {"kind": self._kind(t) + "List", "apiVersion": t.api_version, "metadata": meta, "items": items}

    def _create(self, t: Target, data: Any, manager: str) -> tuple[int, Obj]:
        if not t.namespace and t.plural not in self.cluster_scoped:
            raise K8sError(405, "the server does not allow this method on the requested resource")
        obj = self._check(t, data)
        meta = obj["metadata"]
        for field in SERVER_FIELDS:
            meta.pop(field, None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in "12345"
            )
        if not meta.get("name"):
            raise K8sError(422, f"{obj['kind']} is invalid: metadata.name: Required value: name or generateName")
        t = t._replace(name=meta["name"])
        self._validate(t, obj)
        if t.key in self._objects:
            raise K8sError(409, f'{t.resource} "{t.name}" already exists', "AlreadyExists", t.details)
        self._require_namespace(t)
        self._keep_status(t, obj, None)
        self._admit(t, None, obj)
        return 201, self._save(t.key, None, obj, manager, "Update", obj)

    def _replace(self, t: Target, data: Any, manager: str) -> tuple[int, Obj]:
        obj = self._check(t, data)
        old = self._get(t)
        t.check_version(old, obj["metadata"].get("resourceVersion"))
        if t.subresource:
            obj = {**copy.deepcopy(old), "status": obj.get("status")}
        else:
            self._validate(t, obj)
            self._keep_status(t, obj, old)
            self._admit(t, old, obj)
        return 200, self._save(t.key, old, obj, manager, "Update", obj, t.subresource)

    def _patch(self, t: Target, data: Any, ctype: str, params: dict[str, str], manager: str) -> tuple[int, Obj]:
        if ctype == "application/apply-patch+yaml":
            if not params.get("fieldManager"):
                message = 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply'
                raise K8sError(422, message, details={"group": "meta.k8s.io", "kind": "PatchOptions"})
            return self._apply(t, data, manager, params.get("force") == "true")
        if "force" in params:
            raise K8sError(422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: only allowed for apply')
        if ctype not in PATCH_TYPES:
            raise K8sError(415, f"the server does not support the patch type {ctype!r}")
        if not isinstance(data, dict):
            raise K8sError(400, "the patch must be a JSON object")
        old = self._get(t)
        t.check_version(old, (data.get("metadata") or {}).get("resourceVersion"))
        new = merge_patch(copy.deepcopy(old), data)
        if t.subresource:
            new = {**copy.deepcopy(old), "status": new.get("status")}
        else:
            new["metadata"].update(name=t.name, **({"namespace": t.namespace} if t.namespace else {}))
            self._validate(t, new)
            self._keep_status(t, new, old)
            self._admit(t, old, new)
        return 200, self._save(t.key, old, new, manager, "Update", data, t.subresource)

    def _apply(self, t: Target, data: Any, manager: str, force: bool) -> tuple[int, Obj]:
        if not isinstance(data, dict) or not data.get("apiVersion") or not data.get("kind"):
            raise K8sError(400, "an apply configuration must name its apiVersion and kind")
        obj = self._check(t, data)
        old = self._objects.get(t.key)
        if t.subresource:
            if old is None:
                raise t.not_found()
            new = {**copy.deepcopy(old), "status": merge_patch(copy.deepcopy(old.get("status")), obj.get("status"))}
            return 200, self._save(t.key, old, new, manager, "Apply", {"status": obj.get("status")}, "status")
        t.check_version(old, obj["metadata"].get("resourceVersion"))
        self._validate(t, obj)
        config = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
        config["metadata"] = {
            k: v for k, v in obj["metadata"].items() if k not in ("name", "namespace", *SERVER_FIELDS)
        }
        applied = self._applied.get(t.key, {}) if old is not None else {}
        others = {m: c for m, c in applied.items() if m != manager}
        mine = leaves(config)
        clashes = [
            f'conflict with "{m}": .{".".join(path)}'
            for m, other in others.items()
            for path, value in leaves(other).items()
            if path in mine and mine[path] != value
        ]
        if clashes and not force:
            raise K8sError(409, f"Apply failed with {len(clashes)} conflict(s): {'; '.join(clashes)}", "Conflict")
        if old is None:
            self._require_namespace(t)
            meta = {"name": t.name, **({"namespace": t.namespace} if t.namespace else {})}
            new = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta}
        else:
            new = copy.deepcopy(old)
            prune(new, applied.get(manager, {}), config, list(others.values()))
        new = merge_patch(new, config)
        new.update(apiVersion=obj["apiVersion"], kind=obj["kind"])
        self._keep_status(t, new, old)
        self._admit(t, old, new)
        saved = self._save(t.key, old, new, manager, "Apply", config)
        if t.key in self._objects:
            self._applied[t.key] = {**others, manager: config}
        return (201 if old is None else 200), saved

    def _delete(self, t: Target, options: Any, params: dict[str, str]) -> tuple[int, Obj]:
        obj = self._get(t)
        if not isinstance(options, dict):
            raise K8sError(400, "DeleteOptions must be a JSON object")
        policy = options.get("propagationPolicy") or params.get("propagationPolicy")
        policy = policy or ("Orphan" if options.get("orphanDependents") else "Background")
        if policy not in POLICIES:
            raise K8sError(422, f"DeleteOptions is invalid: propagationPolicy: Unsupported value: {policy!r}")
        for field, expected in (options.get("preconditions") or {}).items():
            if expected and expected != obj["metadata"].get(field):
                raise t.conflict(f"Precondition failed: {field} in precondition: {expected}")
        pending = self._delete_key(t.key, policy)
        if pending is not None:
            return 200, pending
        details = {**t.details, "uid": obj["metadata"]["uid"]}
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    # --- storage ---------------------------------------------------------------------------------------------

    def _key(self, api_version: str, kind_or_plural: str, name: str, namespace: str | None) -> Key:
        plural = plural_of(kind_or_plural)
        scoped = plural in self.cluster_scoped
        return (api_version.rpartition("/")[0], plural, "" if scoped else namespace or "", name)

    def _kind(self, t: Target) -> str:
        return self._kinds.get((t.group, t.plural)) or KIND_OF.get(t.plural) or t.plural.capitalize()

    def _now(self) -> str:
        return datetime.fromtimestamp(self.clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _check(self, t: Target, data: Any) -> Obj:
        """A copy of a request body, with apiVersion, kind, name and namespace checked against the path."""
        if not isinstance(data, dict) or not isinstance(data.get("metadata", {}), dict):
            raise K8sError(400, "the body of the request must be a JSON object with an object metadata")
        obj = copy.deepcopy(data)
        if obj.setdefault("apiVersion", t.api_version) != t.api_version:
            raise K8sError(400, f"the API version in the data ({obj['apiVersion']}) does not match {t.api_version}")
        kind = obj.setdefault("kind", self._kind(t))
        if t.plural in KIND_OF and kind != KIND_OF[t.plural]:
            raise K8sError(400, f"the kind in the data ({kind}) does not match the kind of {t.resource}")
        meta = obj.setdefault("metadata", {})
        if t.name and meta.setdefault("name", t.name) != t.name:
            raise K8sError(
                400, f"the name of the object ({meta['name']}) does not match the name on the URL ({t.name})"
            )
        if t.plural in self.cluster_scoped:
            meta.pop("namespace", None)
        elif meta.setdefault("namespace", t.namespace) != t.namespace:
            raise K8sError(400, "the namespace of the provided object does not match the namespace sent on the request")
        return obj

    def _validate(self, t: Target, obj: Obj) -> None:
        meta, kind = obj["metadata"], obj["kind"]
        name, problems = meta["name"], []
        rule = (
            {"namespaces": DNS_LABEL, "services": DNS1035_LABEL}.get(t.plural, SUBDOMAIN) if not t.group else SUBDOMAIN
        )
        if not (isinstance(name, str) and rule.fullmatch(name) and len(name) <= (253 if rule is SUBDOMAIN else 63)):
            problems.append(f'metadata.name: Invalid value: "{name}": not a lowercase RFC 1123 name')
        for field in ("labels", "annotations"):
            for key, value in (meta.get(field) or {}).items():
                if not isinstance(value, str):
                    raise K8sError(400, f"metadata.{field}.{key}: expected a string, got {type(value).__name__}")
                if not qualified_name(key):
                    problems.append(f'metadata.{field}: Invalid value: "{key}": not a qualified name')
                if field == "labels" and value and not (LABEL_NAME.fullmatch(value) and len(value) <= 63):
                    problems.append(f'metadata.labels: Invalid value: "{value}": not a valid label value')
        if problems:
            details = {"name": name, "group": t.group, "kind": kind}
            raise K8sError(422, f'{kind} "{name}" is invalid: {"; ".join(problems)}', "Invalid", details)

    def _require_namespace(self, t: Target) -> None:
        if not t.namespace:
            return
        namespace = self._objects.get(("", "namespaces", "", t.namespace))
        if namespace is None:
            details = {"name": t.namespace, "kind": "namespaces"}
            raise K8sError(404, f'namespaces "{t.namespace}" not found', details=details)
        if namespace["metadata"].get("deletionTimestamp"):
            message = f"unable to create new content in namespace {t.namespace} because it is being terminated"
            raise K8sError(403, message, details=t.details)

    def _admit(self, t: Target, old: Obj | None, new: Obj) -> None:
        """What the API server's admission and validation do to a PersistentVolumeClaim: a new one gets the
        in-use protection finalizer; afterwards only a bound claim's requested storage may change, never downwards,
        and upwards only through a StorageClass that allows expansion (the PersistentVolumeClaimResize plugin)."""
        if (t.group, t.plural) != ("", "persistentvolumeclaims"):
            return
        if old is None:
            finalizers = new["metadata"].setdefault("finalizers", [])
            if PVC_PROTECTION not in finalizers:
                finalizers.append(PVC_PROTECTION)
            return
        before, after = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
        was = before.pop("resources", {}).get("requests", {}).get("storage")
        wants = after.pop("resources", {}).get("requests", {}).get("storage")
        before.pop("volumeName", None)  # set by the binder, not by the claim's author
        after.pop("volumeName", None)
        unbound = (old.get("status") or {}).get("phase") != "Bound"
        if before != after or (unbound and was != wants):
            message = "spec: Forbidden: spec is immutable after creation except resources.requests for bound claims"
            raise K8sError(422, f'PersistentVolumeClaim "{t.name}" is invalid: {message}', "Invalid", t.details)
        if was == wants or was is None or wants is None:
            return
        if _quantity(wants) < _quantity(was):
            message = "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
            raise K8sError(422, f'PersistentVolumeClaim "{t.name}" is invalid: {message}', "Invalid", t.details)
        cls = self._objects.get(("storage.k8s.io", "storageclasses", "", after.get("storageClassName") or ""))
        if cls is None or not cls.get("allowVolumeExpansion"):
            message = (
                f'persistentvolumeclaims "{t.name}" is forbidden: only dynamically provisioned pvc can be resized '
                "and the storageclass that provisions the pvc must support resize"
            )
            raise K8sError(403, message, "Forbidden", t.details)

    @staticmethod
    def _keep_status(t: Target, new: Obj, old: Obj | None) -> None:
        """Writes to the main resource never change status, as for every kind with a status subresource."""
        if old is not None and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        elif t.key[:2] == ("", "namespaces"):
            new.update(spec={"finalizers": ["kubernetes"], **(new.get("spec") or {})}, status={"phase": "Active"})
        else:
            new.pop("status", None)

    def _save(
        self, key: Key, old: Obj | None, new: Obj, manager: str, op: str, fields: Obj, subresource: str = ""
    ) -> Obj:
        """Store a write, bumping resourceVersion, generation and managedFields; a no-op write changes nothing."""
        if new.get("status") is None:
            new.pop("status", None)
        meta = new["metadata"]
        meta.pop("resourceVersion", None)
        if old is None:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", self._now())
            meta.setdefault("generation", 1)
        else:
            for field in CARRIED_FIELDS:
                if field in old["metadata"]:
                    meta[field] = copy.deepcopy(old["metadata"][field])
                else:
                    meta.pop(field, None)
            content = [{k: v for k, v in o.items() if k not in ("metadata", "status")} for o in (old, new)]
            if content[0] != content[1]:
                meta["generation"] = old["metadata"].get("generation", 1) + 1
        entry = {"manager": manager, "operation": op, "apiVersion": new.get("apiVersion"), "time": self._now()}
        entry.update(
            fieldsType="FieldsV1",
            fieldsV1=fields_v1({k: v for k, v in fields.items() if k not in ("apiVersion", "kind")}),
        )
        if subresource:
            entry["subresource"] = subresource
        entries = meta.setdefault("managedFields", [])
        owners = [(e["manager"], e["operation"], e.get("subresource", "")) for e in entries]
        if (manager, op, subresource) in owners:  # in place, so that a no-op write compares equal
            entries[owners.index((manager, op, subresource))] = entry
        else:
            entries.append(entry)
        if old is not None and _timeless(old) == _timeless(new):
            return old
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        self._objects[key] = new
        self._kinds.setdefault(key[:2], new.get("kind") or "")
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and key[:2] != ("", "namespaces"):
            self._destroy(key, "Background")  # the last finalizer is gone
        return new

    def _delete_key(self, key: Key, policy: str) -> Obj | None:
        """Start deleting: the object, still present, while finalizers or a namespace's contents hold it; else None."""
        obj = self._objects[key]
        namespace = key[:2] == ("", "namespaces")
        finalizers = list(obj["metadata"].get("finalizers") or [])
        if policy == "Foreground" and not namespace and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if not namespace and not finalizers:
            self._destroy(key, policy)
            return None
        new = copy.deepcopy(obj)
        new["metadata"].setdefault("deletionTimestamp", self._now())
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        if namespace:
            new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
        if new != obj:
            self._rv += 1
            new["metadata"]["resourceVersion"] = str(self._rv)
            self._objects[key] = new
        return new

    def _destroy(self, key: Key, policy: str) -> None:
        """Remove an object now (unless finalizers hold it) and delete or orphan the objects it owns."""
        obj = self._objects.get(key)
        if obj is None:
            return
        meta = obj["metadata"]
        if set(meta.get("finalizers") or []) - {"foregroundDeletion"}:
            if not meta.get("deletionTimestamp"):
                self._rv += 1
                meta.update(deletionTimestamp=self._now(), resourceVersion=str(self._rv))
            return
        del self._objects[key]
        self._applied.pop(key, None)
        if key[:2] == ("", "pods"):  # a pod's logs go with it
            for log_key in [k for k in self._logs if k[:2] == (key[2], key[3])]:
                del self._logs[log_key]
        self._rv += 1
        for dependent_key, dependent in list(self._objects.items()):
            refs = dependent["metadata"].get("ownerReferences") or []
            if not any(ref.get("uid") == meta["uid"] for ref in refs):
                continue
            if policy == "Orphan":
                self._rv += 1
                kept = [ref for ref in refs if ref.get("uid") != meta["uid"]]
                dependent["metadata"].update(ownerReferences=kept, resourceVersion=str(self._rv))
            else:
                self._destroy(dependent_key, "Background")


def _quantity(value: str) -> float:
    """A storage quantity in bytes (``100Gi``, ``1Ti``, ``500M``, ``1024``)."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "k": 10**3, "M": 10**6, "G": 10**9}
    units |= {"T": 10**12, "P": 10**15}
    found = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value).strip())
    if found is None or found.group(2) not in (*units, ""):
        raise K8sError(400, f"quantities must match the regular expression of a quantity: {value!r}")
    return float(found.group(1)) * units.get(found.group(2), 1)


def _flag(params: dict[str, str], name: str) -> bool:
    """A boolean query parameter, as Go's ``strconv.ParseBool`` reads it."""
    value = params.get(name, "false")
    if value not in ("1", "t", "T", "true", "TRUE", "True", "0", "f", "F", "false", "FALSE", "False"):
        raise K8sError(400, f"{name}: invalid boolean {value!r}")
    return value in ("1", "t", "T", "true", "TRUE", "True")


def _rfc3339_nano(at: datetime) -> str:
    """Go's RFC3339Nano in UTC, as the kubelet stamps log lines: trailing zeros of the fraction dropped."""
    at = at.astimezone(UTC)
    fraction = f"{at.microsecond:06d}000".rstrip("0")
    return at.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _timeless(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    meta["managedFields"] = [{k: v for k, v in e.items() if k != "time"} for e in meta.get("managedFields") or []]
    return {**obj, "metadata": meta}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: K8sServer) -> None:
        self.app = app
        self.connections: set[socket.socket] = set()
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client's urllib3 pool reuses connections
    disable_nagle_algorithm = True  # headers and body are two writes; Nagle + delayed ACK would add 40 ms each

    def setup(self) -> None:
        super().setup()
        cast(_HTTPServer, self.server).connections.add(self.connection)

    def finish(self) -> None:
        cast(_HTTPServer, self.server).connections.discard(self.connection)
        super().finish()

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, data, content_type = cast(_HTTPServer, self.server).app.handle(self.command, self.path, body, headers)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request would drown the test output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="In-memory Kubernetes API server for tests and benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--token", default=None, help="require 'Authorization: Bearer <token>' (default: no auth)")
    args = parser.parse_args(argv)
    server = K8sServer(token=args.token, host=args.host, port=args.port)
    print(f"Kubernetes test server on {server.url} (token {args.token or 'not required'})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
