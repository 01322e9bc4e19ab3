"""A stand-in for Envoy Gateway's data path, for tests: it reads the Gateway API and Envoy Gateway objects Ladder
rendered from the (fake) Kubernetes API server through the official client, and admits requests as Envoy Gateway
documents those policies: a route's own SecurityPolicy replaces the Gateway's; ``jwt`` checks a bearer token's
ES256 signature against the provider's remote JWKS (fetched over HTTP, kept ``cacheDuration``), its issuer,
audiences and expiry, then ``authorization`` rules on its claims; ``extAuth`` asks the HTTP service it names (the
original ``Host`` as ``X-Forwarded-Host``, the headers it lists) and passes a refusal on as it came; a route's
BackendTrafficPolicy local rate limit counts per window. Envoy itself cannot run here; this double exists so the
tests can show what reaches Ladder when the gateway does its part.

An admitted request goes on to its route's replica, which takes ``replica(route)`` milliseconds (the test says how
long); the double keeps Envoy's per-cluster request-time histogram of it and serves Envoy's statistics as Envoy's
admin interface does (``serve_stats``: ``/stats/prometheus``, Envoy's names, labels and default buckets), for a real
Prometheus to scrape. Every route's cluster is listed from its creation, at zero, as Envoy lists a cluster's.

The clock (``now``) is injected: the tests move it past a JWKS's cache duration instead of sleeping.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from kubernetes import client

ROUTES = ("gateway.networking.k8s.io", "v1", "httproutes")
SECURITY = ("gateway.envoyproxy.io", "v1alpha1", "securitypolicies")
TRAFFIC = ("gateway.envoyproxy.io", "v1alpha1", "backendtrafficpolicies")
UNITS = {"Second": 1, "Minute": 60, "Hour": 3600, "Day": 86400}
# Envoy's default histogram buckets (ms for request times).
BUCKETS = (
    0.5,
    1,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1000,
    2500,
    5000,
    10000,
    30000,
    60000,
    300000,
    600000,
    1800000,
    3600000,
)


@dataclass
class Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: float = 0.0
    count: int = 0

    def observe(self, ms: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if ms <= bound:
                self.buckets[i] += 1
        self.total += ms
        self.count += 1


@dataclass
class Answer:
    status: int
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    forwarded_to: str | None = None  # the backend Service the request went on to, when admitted


def _seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+)(ms|s|m|h)", duration)
    if match is None:
        raise ValueError(f"not a Gateway API duration: {duration}")
    return int(match[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match[2]]


class EnvoyGatewayDouble:
    def __init__(
        self,
        api: client.ApiClient,
        *,
        services: dict[tuple[str, str, int], str],
        now: Callable[[], float],
        replica: Callable[[str], float] = lambda route: 0.0,
    ) -> None:
        self.objects = client.CustomObjectsApi(api)
        self.replica = replica  # "<namespace>/<route>" -> how long its replica takes to answer (ms)
        self.request_times: dict[str, Histogram] = {}  # Envoy cluster name -> its upstream_rq_time
        self._lock = threading.Lock()
        self._stats: ThreadingHTTPServer | None = None
        self.services = services  # (namespace, name, port) -> the base URL it answers at
        self.now = now
        self.jwks: dict[str, tuple[float, dict[str, Any]]] = {}  # uri -> (fetched at, document)
        self.jwks_fetches = 0
        self.windows: dict[tuple[str, int], int] = {}

    # --- what the control plane would have pushed -------------------------------------------------------------

    def _list(self, resource: tuple[str, str, str]) -> list[dict[str, Any]]:
        group, version, plural = resource
        return list(self.objects.list_cluster_custom_object(group, version, plural).get("items", []))

    def _route(self, host: str) -> dict[str, Any] | None:
        return next((r for r in self._list(ROUTES) if host in r["spec"].get("hostnames", [])), None)

    def _policy(self, resource: tuple[str, str, str], kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        for policy in self._list(resource):
            if policy["metadata"]["namespace"] != namespace:
                continue
            if any(t["kind"] == kind and t["name"] == name for t in policy["spec"].get("targetRefs", [])):
                return policy
        return None

    def _gateway_policy(self, route: dict[str, Any]) -> dict[str, Any] | None:
        parent = route["spec"]["parentRefs"][0]
        namespace = parent.get("namespace", route["metadata"]["namespace"])
        return self._policy(SECURITY, "Gateway", parent["name"], namespace)

    # --- a request ----------------------------------------------------------------------------------------------

    def request(self, host: str, authorization: str = "") -> Answer:
        route = self._route(host)
        if route is None:
            return Answer(404, {"detail": "no route"})
        namespace, name = route["metadata"]["namespace"], route["metadata"]["name"]
        limited = self._rate_limited(name, namespace)
        if limited is not None:
            return limited
        policy = self._policy(SECURITY, "HTTPRoute", name, namespace) or self._gateway_policy(route)
        spec = (policy or {}).get("spec", {})
        if "jwt" in spec:
            refused = self._jwt(spec, authorization)
            if refused is not None:
                return refused
        if "extAuth" in spec:
            refused = self._ext_auth(spec["extAuth"], host, authorization)
            if refused is not None:
                return refused
        if "jwt" not in spec and spec.get("authorization", {}).get("defaultAction") == "Deny":
            return Answer(403, {"detail": "RBAC: access denied"})
        backend = route["spec"]["rules"][0]["backendRefs"][0]
        took = self.replica(f"{namespace}/{name}")
        with self._lock:
            self.request_times.setdefault(self.cluster(namespace, name), Histogram()).observe(took)
        return Answer(200, forwarded_to=f"{namespace}/{backend['name']}:{backend['port']}")

    # --- Envoy's statistics -----------------------------------------------------------------------------------

    @staticmethod
    def cluster(namespace: str, route: str) -> str:
        """The Envoy cluster Envoy Gateway makes for a route's first rule."""
        return f"httproute/{namespace}/{route}/rule/0"

    def exposition(self) -> str:
        """``/stats/prometheus``: each route's cluster's request-time histogram and request gauges."""
        with self._lock:
            for route in self._list(ROUTES):
                meta = route["metadata"]
                self.request_times.setdefault(self.cluster(meta["namespace"], meta["name"]), Histogram())
            found = {name: (list(h.buckets), h.total, h.count) for name, h in self.request_times.items()}
        lines = ["# TYPE envoy_cluster_upstream_rq_active gauge"]
        lines += [f'envoy_cluster_upstream_rq_active{{envoy_cluster_name="{name}"}} 0' for name in found]
        lines.append("# TYPE envoy_cluster_upstream_rq_pending_active gauge")
        lines += [f'envoy_cluster_upstream_rq_pending_active{{envoy_cluster_name="{name}"}} 0' for name in found]
        lines.append("# TYPE envoy_cluster_upstream_rq_time histogram")
        for name, (buckets, total, count) in found.items():
            label = f'envoy_cluster_name="{name}"'
            for bound, n in zip(BUCKETS, buckets, strict=True):
                lines.append(f'envoy_cluster_upstream_rq_time_bucket{{{label},le="{bound:g}"}} {n}')
            lines.append(f'envoy_cluster_upstream_rq_time_bucket{{{label},le="+Inf"}} {count}')
            lines.append(f"envoy_cluster_upstream_rq_time_sum{{{label}}} {total:g}")
            lines.append(f"envoy_cluster_upstream_rq_time_count{{{label}}} {count}")
        return "\n".join(lines) + "\n"

    def serve_stats(self) -> str:
        """Serve ``/stats/prometheus`` on a free port of 127.0.0.1 (until ``close``); its URL."""
        double = self

        class Stats(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/stats/prometheus":
                    self.send_error(404)
                    return
                body = double.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._stats = ThreadingHTTPServer(("127.0.0.1", 0), Stats)
        threading.Thread(target=self._stats.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._stats.server_address[1]}/stats/prometheus"

    def close(self) -> None:
        if self._stats is not None:
            self._stats.shutdown()
            self._stats.server_close()

    def _rate_limited(self, route: str, namespace: str) -> Answer | None:
        policy = self._policy(TRAFFIC, "HTTPRoute", route, namespace)
        if policy is None:
            return None
        limit = policy["spec"]["rateLimit"]["local"]["rules"][0]["limit"]
        window = (f"{namespace}/{route}", int(self.now() // UNITS[limit["unit"]]))
        self.windows[window] = self.windows.get(window, 0) + 1
        if self.windows[window] > limit["requests"]:
            return Answer(429, {"detail": "local_rate_limited"})
        return None

    def _keys(self, remote: dict[str, Any]) -> dict[str, Any]:
        uri, ttl = remote["uri"], _seconds(remote.get("cacheDuration", "300s"))
        cached = self.jwks.get(uri)
        if cached is None or self.now() - cached[0] >= ttl:
            with urllib.request.urlopen(uri, timeout=10) as response:
                document = json.loads(response.read())
            self.jwks_fetches += 1
            self.jwks[uri] = (self.now(), document)
            cached = self.jwks[uri]
        return cached[1]

    def _jwt(self, spec: dict[str, Any], authorization: str) -> Answer | None:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return Answer(401, {"detail": "Jwt is missing"})
        (provider,) = spec["jwt"]["providers"]
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            jwk = next((k for k in self._keys(provider["remoteJWKS"])["keys"] if k["kid"] == kid), None)
            if jwk is None:
                return Answer(401, {"detail": "Jwks doesn't have key to match kid or alg from Jwt"})
            claims = jwt.decode(
                token,
                jwt.PyJWK(jwk).key,
                algorithms=[jwk["alg"]],
                audience=provider.get("audiences"),
                issuer=provider.get("issuer"),
                options={"verify_exp": False},
            )
        except jwt.PyJWTError as error:
            return Answer(401, {"detail": f"Jwt verification fails: {error}"})
        if claims["exp"] <= self.now():
            return Answer(401, {"detail": "Jwt is expired"})
        rules = spec.get("authorization", {})
        for rule in rules.get("rules", []):
            wanted = rule["principal"]["jwt"].get("claims", [])
            if all(str(claims.get(c["name"])) in c["values"] for c in wanted):
                return None if rule["action"] == "Allow" else Answer(403, {"detail": "RBAC: access denied"})
        denied = Answer(403, {"detail": "RBAC: access denied"})
        return None if rules.get("defaultAction", "Allow") == "Allow" else denied

    def _ext_auth(self, ext: dict[str, Any], host: str, authorization: str) -> Answer | None:
        (backend,) = ext["http"]["backendRefs"]
        base = self.services[(backend["namespace"], backend["name"], backend["port"])]
        request = urllib.request.Request(f"{base}{ext['http'].get('path', '')}")
        request.add_header("X-Forwarded-Host", host)
        if authorization and "authorization" in [h.lower() for h in ext.get("headersToExtAuth", [])]:
            request.add_header("Authorization", authorization)
        try:
            with urllib.request.urlopen(request, timeout=_seconds(ext.get("timeout", "10s"))):
                return None
        except urllib.error.HTTPError as refused:
            body = refused.read()
            return Answer(refused.code, json.loads(body) if body else {}, dict(refused.headers.items()))
