"""A stand-in for Envoy Gateway's data path, for tests: it reads the Gateway API and Envoy Gateway objects Ladder
rendered from the (fake) Kubernetes API server through the official client, and admits requests as Envoy Gateway
documents those policies: a route's own SecurityPolicy replaces the Gateway's; ``jwt`` checks a bearer token's
ES256 signature against the provider's remote JWKS (fetched over HTTP, kept ``cacheDuration``), its issuer,
audiences and expiry, then ``authorization`` rules on its claims; ``extAuth`` asks the HTTP service it names (the
original ``Host`` as ``X-Forwarded-Host``, the headers it lists) and passes a refusal on as it came; a route's
BackendTrafficPolicy local rate limit counts per window. Envoy itself cannot run here; this double exists so the
tests can show what reaches Ladder when the gateway does its part.

The clock (``now``) is injected: the tests move it past a JWKS's cache duration instead of sleeping.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jwt
from kubernetes import client

ROUTES = ("gateway.networking.k8s.io", "v1", "httproutes")
SECURITY = ("gateway.envoyproxy.io", "v1alpha1", "securitypolicies")
TRAFFIC = ("gateway.envoyproxy.io", "v1alpha1", "backendtrafficpolicies")
UNITS = {"Second": 1, "Minute": 60, "Hour": 3600, "Day": 86400}


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
    ) -> None:
        self.objects = client.CustomObjectsApi(api)
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
        return Answer(200, forwarded_to=f"{namespace}/{backend['name']}:{backend['port']}")

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
