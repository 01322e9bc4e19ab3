"""How an allocation is reached on Kubernetes: Services for the ports its workload exposes, Gateway API HTTPRoutes
for its public ports and its serverless endpoint, the SSH route the hall's SSH gateway follows, and the
NetworkPolicies that let exactly that traffic through the tenant's default deny. And the cluster-wide half, which
the operator installs once: the shared Gateway ``ladder`` and the SSH gateway's Service and RBAC.

Ports a workload exposes to its ``tenant`` need no policy of their own: the namespace's ``allow-same-namespace``
already admits traffic between the tenant's pods. Pure functions returning plain dicts (no Django, no I/O).
"""

from __future__ import annotations

from provisioning.domain.rungs import Rung
from provisioning.domain.workload_access import route_host, ssh_user
from provisioning.domain.workloads import SERVE_PORT, SSH_PORT, Port, Workload
from provisioning.drivers.kubernetes.manifest import (
    MANAGED_BY_LABEL,
    SYSTEM_NAMESPACE,
    Obj,
    from_namespace,
    hosts,
    meta,
    obj,
    own,
    selector,
)
from provisioning.drivers.kubernetes.render_slurm import LABEL_SLURM_ROLE, LOGIN_PORT, LOGIN_USER
from provisioning.drivers.kubernetes.render_workload import (
    SSH_SIDECAR_PORT,
    SSH_SIDECAR_USER,
    gets_ssh,
    os_image_of,
    port_name,
)
from provisioning.drivers.kubernetes.shapes import MANAGED_BY, AllocationShape
from tenancy.domain.endpoint_tokens import TENANT_CLAIM, tenant_audience

GATEWAY_API = "gateway.networking.k8s.io/v1"
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"  # Envoy Gateway's policies (docs/serverless.md)
JWT_PROVIDER = "ladder"
GATEWAY_CHECK_POLICY = "ladder-gateway-check"  # on the Gateway: Ladder's per-request check, and the wake path
AUTHORIZE_PATH = "/api/v1/gateway/authorize"
LADDER_API_SERVICE = ("ladder", "ladder-web", 80)  # Ladder's web Service as deploy/kustomize/overlays/prod names it
GATEWAY = "ladder"  # the shared Gateway, in ladder-system
GATEWAY_LISTENER = "https"
GATEWAY_CLASS = "ladder"  # the operator's Gateway implementation registers a GatewayClass of this name
GATEWAY_TLS_SECRET = "ladder-gateway-tls"  # noqa: S105 - the name of the certificate's Secret, not a password
SSH_GATEWAY = "ladder-ssh-gateway"
LABEL_SSH_USER = "ladder.io/ssh-user"  # on an SSH Service: the SSH user the hall's gateway routes to it
LABEL_GATEWAY_AUTH = "ladder.io/gateway-auth"  # on an HTTPRoute: "api-key" when callers need the tenant's key
ANNOTATION_SSH_KEYS = "ladder.io/ssh-authorized-keys"  # public keys the SSH gateway accepts for the route
ANNOTATION_SSH_LOGIN = "ladder.io/ssh-login"  # the user the SSH gateway logs in as upstream
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
# HTTPS out for a dataset's download: anywhere but link-local (a cloud's metadata service lives there). Kubernetes
# policies cannot name a host, and Ladder's API may sit anywhere; docs/kubernetes.md says how to narrow this.
API_EGRESS = ({"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}, {"cidr": "::/0", "except": ["fe80::/10"]})


def _workload(a: AllocationShape) -> Workload:
    return a.workload or Workload()


def serve_port(a: AllocationShape) -> int:
    """A serverless endpoint's serving port: its workload's public http port, else ``SERVE_PORT``."""
    public = _workload(a).public_ports()
    return public[0].port if public else SERVE_PORT


def ports_service_name(a: AllocationShape) -> str:
    """``ldr-<id>``; on the job rung, where that is the headless Service naming the gang, ``ldr-<id>-ports``."""
    return f"{a.object_name}-ports" if a.rung == Rung.JOB else a.object_name


def ssh_service_name(a: AllocationShape) -> str:
    return f"{a.object_name}-ssh"


def _service_port(p: Port, name: str | None = None) -> Obj:
    protocol = "UDP" if p.protocol == "udp" else "TCP"
    return {"name": name or port_name(p), "port": p.port, "targetPort": p.port, "protocol": protocol}


def _exposed(a: AllocationShape) -> tuple[Port, ...]:
    return tuple(p for p in _workload(a).ports if p.expose in ("tenant", "public"))


def services(a: AllocationShape) -> list[Obj]:
    """The Service of the exposed ports. Serverless always has one, port 80 to the serving port; a job's reaches
    member 0 only (a dashboard or a notebook runs once, not once per member)."""
    if a.rung == Rung.SERVERLESS:
        serving = serve_port(a)
        ports = [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
        ports += [_service_port(p) for p in _exposed(a) if p.port != serving]
        return [obj("v1", "Service", own(a), spec={"selector": selector(a), "ports": ports})]
    exposed = _exposed(a)
    if not exposed:
        return []
    chosen = {**selector(a), JOB_INDEX: "0"} if a.rung == Rung.JOB else selector(a)
    spec = {"selector": chosen, "ports": [_service_port(p) for p in exposed]}
    return [obj("v1", "Service", own(a, ports_service_name(a)), spec=spec)]


def _route(a: AllocationShape, name: str, host: str, backend: str, port: int, **labels: str) -> Obj:
    parent = {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "namespace": SYSTEM_NAMESPACE,
        "name": GATEWAY,
        "sectionName": GATEWAY_LISTENER,
    }
    rule: Obj = {"backendRefs": [{"name": backend, "port": port}]}
    if labels.get(LABEL_GATEWAY_AUTH):
        # The gateway checked the caller's Ladder API key; the tenant's code has no use for it, so it stops here.
        rule["filters"] = [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": ["Authorization"]}}]
    spec = {"parentRefs": [parent], "hostnames": [host], "rules": [rule]}
    return obj(GATEWAY_API, "HTTPRoute", own(a, name, **labels), spec=spec)


def routes(a: AllocationShape) -> list[Obj]:
    """An HTTPRoute ``ldr-<id>-<port>`` per public port, and ``ldr-<id>`` for a serverless endpoint, which only
    answers callers with the tenant's API key (label ``ladder.io/gateway-auth: api-key``, docs/kubernetes.md)."""
    if a.rung == Rung.SERVERLESS:
        host = route_host(a.id, a.base_domain)
        return [_route(a, a.object_name, host, a.object_name, 80, **{LABEL_GATEWAY_AUTH: "api-key"})]
    return [
        _route(
            a,
            f"{a.object_name}-{p.port}",
            route_host(a.id, a.base_domain, p.port),
            ports_service_name(a),
            p.port,
        )
        for p in _workload(a).public_ports()
    ]


def _route_ref(name: str) -> Obj:
    return {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}


def _route_names(a: AllocationShape) -> list[str]:
    return [str(r["metadata"]["name"]) for r in routes(a)]


def rate_limits(a: AllocationShape) -> list[Obj]:
    """Each route's calls a minute, counted at the gateway itself (Envoy Gateway's local rate limit, per proxy
    replica): the tenant's ``endpoint_calls_per_minute`` per endpoint or public port, as the per-request check
    counts it, so one busy endpoint is refused alone whichever way its callers are checked."""
    rule = {"limit": {"requests": a.calls_per_minute, "unit": "Minute"}}
    return [
        obj(
            ENVOY_GATEWAY_API,
            "BackendTrafficPolicy",
            own(a, name),
            spec={"targetRefs": [_route_ref(name)], "rateLimit": {"type": "Local", "local": {"rules": [rule]}}},
        )
        for name in _route_names(a)
    ]


def open_ports(a: AllocationShape) -> list[Obj]:
    """A public port is public: its route's own SecurityPolicy lets every request through, so the Gateway's
    per-request check (which a route-level policy replaces) is never asked about it."""
    if a.rung == Rung.SERVERLESS:
        return []
    return [
        obj(
            ENVOY_GATEWAY_API,
            "SecurityPolicy",
            own(a, name),
            spec={"targetRefs": [_route_ref(name)], "authorization": {"defaultAction": "Allow"}},
        )
        for name in _route_names(a)
    ]


def endpoint_token_policy(a: AllocationShape) -> Obj:
    """The running endpoint's own SecurityPolicy (``ldr-<id>`` on its route): the gateway checks each caller's
    endpoint token itself (signature against the tenant's JWKS at Ladder, refreshed every
    ``keys_seconds``; issuer; an audience naming this endpoint or all the tenant's; the tenant's claim), so no
    call reaches Ladder. Applied once the endpoint runs and withdrawn before it scales to zero: an idle endpoint's
    calls fall back to the Gateway's policy, Ladder's check, which wakes it (``gateway_check_policy``)."""
    provider = {
        "name": JWT_PROVIDER,
        "issuer": a.ladder_url,
        "audiences": [route_host(a.id, a.base_domain), tenant_audience(a.tenant, a.base_domain)],
        "remoteJWKS": {
            "uri": f"{a.ladder_url}/api/v1/gateway/jwks/{a.tenant}",
            "cacheDuration": f"{a.keys_seconds}s",
        },
    }
    own_tenant = {"name": TENANT_CLAIM, "values": [a.tenant]}
    rule = {
        "name": "own-tenant",
        "action": "Allow",
        "principal": {"jwt": {"provider": JWT_PROVIDER, "claims": [own_tenant]}},
    }
    spec = {
        "targetRefs": [_route_ref(a.object_name)],
        "jwt": {"providers": [provider]},
        "authorization": {"defaultAction": "Deny", "rules": [rule]},
    }
    return obj(ENVOY_GATEWAY_API, "SecurityPolicy", own(a), spec=spec)


def ssh_objects(a: AllocationShape) -> list[Obj]:
    """The Service the hall's SSH gateway routes ``ldr-<id>`` to, labelled ``ladder.io/ssh-user: ldr-<id>``: the
    SSH sidecar (container), the VM's launcher pod, or on bare metal an ExternalName naming the first held node
    (the host is no pod while the tenant's OS runs on it; the gateway connects to that Node's InternalIP, and the
    allocation's other hosts are reached from the first). Annotations tell the gateway the public keys it accepts
    for ``ldr-<id>`` (``ladder.io/ssh-authorized-keys``: it never reads a Secret) and the user it logs in as
    (``ladder.io/ssh-login``: the sidecar's, or the OS image's)."""
    if not gets_ssh(a):
        return []
    keys = "\n".join(k for k in a.materials.ssh_keys if not k.startswith("cert-authority"))
    metadata = own(a, ssh_service_name(a), **{LABEL_SSH_USER: ssh_user(a.id)})
    slurm = a.spec.is_slurm
    login = LOGIN_USER if slurm else SSH_SIDECAR_USER if a.rung == Rung.CONTAINER else os_image_of(a).user
    metadata["annotations"] = {ANNOTATION_SSH_KEYS: keys, ANNOTATION_SSH_LOGIN: login}
    spec: Obj
    if slurm:
        # A Slurm cluster's login node: the LoginSet's pod, its sshd on Slinky's port 22.
        port = {"name": "ssh", "port": SSH_PORT, "targetPort": LOGIN_PORT, "protocol": "TCP"}
        spec = {"selector": _login_pods(a), "ports": [port]}
    elif a.rung == Rung.BARE_METAL:
        spec = {
            "type": "ExternalName",
            "externalName": hosts(a)[0],
            "ports": [{"name": "ssh", "port": SSH_PORT, "protocol": "TCP"}],
        }
    else:
        target: int | str = "ssh" if a.rung == Rung.CONTAINER else SSH_PORT
        port = {"name": "ssh", "port": SSH_PORT, "targetPort": target, "protocol": "TCP"}
        spec = {"selector": selector(a), "ports": [port]}
    return [obj("v1", "Service", metadata, spec=spec)]


def _login_pods(a: AllocationShape) -> dict[str, str]:
    return {**selector(a), LABEL_SLURM_ROLE: "login"}


def _ssh_pod_port(a: AllocationShape) -> int | None:
    """The port SSH reaches in the allocation's pod: the sidecar's, the VM's own 22 (its launcher forwards), or a
    Slurm login node's sshd."""
    if a.spec.is_slurm and gets_ssh(a):
        return LOGIN_PORT
    if a.rung not in (Rung.CONTAINER, Rung.VM) or not gets_ssh(a):
        return None
    return SSH_SIDECAR_PORT if a.rung == Rung.CONTAINER else SSH_PORT


def network_policies(a: AllocationShape) -> list[Obj]:
    """``ldr-<id>-ingress``: from ``ladder-system`` only, the public ports (or the serverless serving port) for the
    HTTPS gateway and the SSH port for the SSH gateway. ``ldr-<id>-egress``: HTTPS out while the workload has
    datasets to download (a NetworkPolicy cannot tell the init container from the worker: it is the pod's)."""
    web = [serve_port(a)] if a.rung == Rung.SERVERLESS else [p.port for p in _workload(a).public_ports()]
    rules = []
    if web:
        rules.append(
            {"from": [from_namespace(SYSTEM_NAMESPACE)], "ports": [{"protocol": "TCP", "port": p} for p in web]}
        )
    ssh = _ssh_pod_port(a)
    if ssh is not None:
        rules.append({"from": [from_namespace(SYSTEM_NAMESPACE)], "ports": [{"protocol": "TCP", "port": ssh}]})
    objs = []
    # A Slurm cluster is reached on its login node only (its daemons talk within their namespace).
    pods = {"matchLabels": _login_pods(a) if a.spec.is_slurm else selector(a)}
    if rules:
        spec = {"podSelector": pods, "policyTypes": ["Ingress"], "ingress": rules}
        objs.append(obj("networking.k8s.io/v1", "NetworkPolicy", own(a, f"{a.object_name}-ingress"), spec=spec))
    if _workload(a).datasets:
        to = [{"ipBlock": dict(block)} for block in API_EGRESS]
        egress = [{"to": to, "ports": [{"protocol": "TCP", "port": 443}]}]
        spec = {"podSelector": {"matchLabels": selector(a)}, "policyTypes": ["Egress"], "egress": egress}
        objs.append(obj("networking.k8s.io/v1", "NetworkPolicy", own(a, f"{a.object_name}-egress"), spec=spec))
    return objs


def access_objects(a: AllocationShape) -> list[Obj]:
    """Services, routes and policies of one allocation, in apply order."""
    return services(a) + ssh_objects(a) + routes(a) + rate_limits(a) + open_ports(a) + network_policies(a)


# --- once per cluster -------------------------------------------------------------------------------------------


def gateway(base_domain: str) -> Obj:
    """The shared Gateway: HTTPS on 443 for ``*.<base_domain>``, terminated with the certificate in the Secret
    ``ladder-gateway-tls``, taking routes from Ladder's namespaces only."""
    listener = {
        "name": GATEWAY_LISTENER,
        "protocol": "HTTPS",
        "port": 443,
        "hostname": f"*.{base_domain}",
        "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": GATEWAY_TLS_SECRET}]},
        "allowedRoutes": {
            "namespaces": {"from": "Selector", "selector": {"matchLabels": {MANAGED_BY_LABEL: MANAGED_BY}}},
            "kinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
        },
    }
    spec = {"gatewayClassName": GATEWAY_CLASS, "listeners": [listener]}
    return obj(GATEWAY_API, "Gateway", meta(GATEWAY, SYSTEM_NAMESPACE), spec=spec)


def gateway_check_policy(api: tuple[str, str, int], hold_seconds: float) -> list[Obj]:
    """Ladder's per-request check on the whole Gateway (``SecurityPolicy`` ``ladder-gateway-check`` in
    ladder-system), for every route without a policy of its own: an idle endpoint's (the check wakes it and holds
    the request up to ``hold_seconds``, so the external authorization's timeout is a little longer) and, for
    gateways that cannot check tokens, every endpoint's. ``api`` is Ladder's web Service (namespace, name,
    port); a ReferenceGrant in its namespace lets the policy name it."""
    namespace, service, port = api
    ext_auth = {
        "http": {"backendRefs": [{"name": service, "namespace": namespace, "port": port}], "path": AUTHORIZE_PATH},
        "headersToExtAuth": ["authorization", "x-forwarded-host"],
        "timeout": f"{int(hold_seconds) + 5}s",
        "failOpen": False,
    }
    gateway_ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY}
    grant = {
        "from": [{"group": "gateway.envoyproxy.io", "kind": "SecurityPolicy", "namespace": SYSTEM_NAMESPACE}],
        "to": [{"group": "", "kind": "Service", "name": service}],
    }
    return [
        obj(
            ENVOY_GATEWAY_API,
            "SecurityPolicy",
            meta(GATEWAY_CHECK_POLICY, SYSTEM_NAMESPACE),
            spec={"targetRefs": [gateway_ref], "extAuth": ext_auth},
        ),
        obj("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", meta(GATEWAY_CHECK_POLICY, namespace), spec=grant),
    ]


def ssh_gateway() -> list[Obj]:
    """What the hall's SSH gateway (an operator install in ladder-system) needs from Ladder: a ServiceAccount that
    may read Services cluster-wide (it lists those labelled ``ladder.io/ssh-user``; RBAC cannot filter by label)
    and get Nodes (a bare-metal route names its host), and its LoadBalancer Service on port 22, to the gateway
    pods' port named ``ssh``."""
    app = {"app.kubernetes.io/name": SSH_GATEWAY}
    rules = [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]
    binding = {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SSH_GATEWAY},
        "subjects": [{"kind": "ServiceAccount", "name": SSH_GATEWAY, "namespace": SYSTEM_NAMESPACE}],
    }
    port = {"name": "ssh", "port": SSH_PORT, "targetPort": "ssh", "protocol": "TCP"}
    return [
        obj("v1", "ServiceAccount", meta(SSH_GATEWAY, SYSTEM_NAMESPACE, app)),
        obj("rbac.authorization.k8s.io/v1", "ClusterRole", meta(SSH_GATEWAY, labels=app), rules=rules),
        obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", meta(SSH_GATEWAY, labels=app), **binding),
        obj(
            "v1",
            "Service",
            meta(SSH_GATEWAY, SYSTEM_NAMESPACE, app),
            spec={"type": "LoadBalancer", "selector": app, "ports": [port]},
        ),
    ]
