"""Talking to one cluster through the official ``kubernetes`` client, for any kind: server-side apply with field
manager ``ladder``, get, list by labels or fields, delete with foreground propagation, merge patches; and a pod's
container log (text, not JSON).

Generic on purpose: the same five calls serve core kinds and CRDs (Kueue, KubeVirt, DRA) alike, by Kubernetes'
REST path conventions, without a discovery round trip per object.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "ladder"
TIMEOUT = (5, 30)  # connect, read (seconds)

# Kinds whose objects live outside namespaces.
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "ClusterQueue",
        "ResourceFlavor",
        "Topology",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "DeviceClass",
        "PersistentVolume",
        "StorageClass",
        "VolumeSnapshotClass",
        "VolumeSnapshotContent",
    }
)

# Kinds whose resource name is not their lower-cased plural.
IRREGULAR = {"NetworkAttachmentDefinition": "network-attachment-definitions"}  # Multus


def plural(kind: str) -> str:
    """The resource name of a kind, by the API's English: NetworkPolicy -> networkpolicies, RuntimeClass ->
    runtimeclasses, Pod -> pods; and the few CRDs whose plural is not (``IRREGULAR``)."""
    if kind in IRREGULAR:
        return IRREGULAR[kind]
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def collection_path(api_version: str, kind: str, namespace: str | None = None) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    scope = f"/namespaces/{namespace}" if namespace and kind not in CLUSTER_SCOPED else ""
    return f"{base}{scope}/{plural(kind)}"


def object_path(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{collection_path(obj['apiVersion'], obj['kind'], meta.get('namespace'))}/{meta['name']}"


class ClusterUnavailable(ConnectionError):
    """The API server did not answer (connection refused, timeout, 5xx): try again later, nothing is lost. A
    ``ConnectionError``, so the provisioning tasks retry it with backoff."""


@dataclass
class Kube:
    api: k8s.ApiClient

    @classmethod
    def connect(cls, *, api_server: str, credentials: dict[str, Any]) -> Kube:
        """A client from ``{"kubeconfig": text}`` or ``{"token": ..., "ca_cert": PEM or absent}``."""
        if "kubeconfig" in credentials:
            api = k8s_config.new_client_from_config_dict(yaml.safe_load(credentials["kubeconfig"]))
            return cls(api)
        configuration = k8s.Configuration()
        configuration.host = api_server
        if credentials.get("token"):
            configuration.api_key = {"BearerToken": credentials["token"]}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        if credentials.get("ca_cert"):
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as handle:
                handle.write(credentials["ca_cert"])
            configuration.ssl_ca_cert = handle.name
        configuration.retries = 0  # the caller retries, with backoff
        return cls(k8s.ApiClient(configuration))

    def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Any:
        data = self._call(method, path, query=query, body=body, content_type=content_type, accept="application/json")
        return json.loads(data) if data else None

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None,
        body: Any,
        content_type: str | None,
        accept: str,
    ) -> bytes:
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            response = self.api.call_api(
                path,
                method,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=TIMEOUT,
            )
        except ApiException as error:
            if error.status == 0 or error.status >= 500:
                raise ClusterUnavailable(f"{method} {path}: {error.status} {error.reason}") from error
            raise
        except Exception as error:  # urllib3's connection and timeout errors
            if type(error).__module__.startswith("urllib3"):
                raise ClusterUnavailable(f"{method} {path}: {error}") from error
            raise
        data: bytes = response.data
        return data

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply: create or update the fields Ladder manages, idempotently."""
        result: dict[str, Any] = self.request(
            "PATCH",
            object_path(obj),
            query=[("fieldManager", FIELD_MANAGER), ("force", "true")],
            body=obj,
            content_type="application/apply-patch+yaml",
        )
        return result

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.request("GET", f"{collection_path(api_version, kind, namespace)}/{name}")
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        labels: dict[str, str] | None = None,
        fields: dict[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        query = [("labelSelector", ",".join(f"{k}={v}" for k, v in sorted(labels.items())))] if labels else []
        if fields:
            query.append(("fieldSelector", ",".join(f"{k}={v}" for k, v in sorted(fields.items()))))
        found = self.request("GET", collection_path(api_version, kind, namespace), query=query)
        items: list[dict[str, Any]] = found.get("items", [])
        for item in items:  # a list's items carry no apiVersion/kind
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def pod_log(
        self, namespace: str, pod: str, container: str, *, since: datetime | None = None, tail: int | None = None
    ) -> str:
        """A container's log, each line prefixed with its RFC 3339 time (``timestamps=true``): the lines written at
        or after ``since`` (to the second: the API takes no finer), the last ``tail`` of them.

        Through ``ApiClient.call_api`` rather than ``CoreV1Api.read_namespaced_pod_log``, which has no
        ``sinceTime`` (only ``sinceSeconds``, relative to the kubelet's clock)."""
        query = [("container", container), ("timestamps", "true")]
        if since is not None:
            query.append(("sinceTime", since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
        if tail is not None:
            query.append(("tailLines", str(tail)))
        path = f"{collection_path('v1', 'Pod', namespace)}/{pod}/log"
        data = self._call("GET", path, query=query, body=None, content_type=None, accept="text/plain")
        return data.decode("utf-8", errors="replace")  # a program may write any bytes

    def delete(self, obj: dict[str, Any], *, propagation: str = "Foreground") -> bool:
        """Delete with foreground propagation (dependents first; ``Background`` for an object that has none and
        must be gone at once); False when it was already gone."""
        try:
            self.request(
                "DELETE",
                object_path(obj),
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation},
                content_type="application/json",
            )
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def merge_patch(self, obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "PATCH", object_path(obj), body=patch, content_type="application/merge-patch+json"
        )
        return result

    def version(self) -> str:
        found = self.request("GET", "/version")
        return str(found.get("gitVersion", "")) if isinstance(found, dict) else ""
