"""The ways into an allocation: HTTPRoutes on the shared Gateway for public ports and serverless endpoints, SSH
routes for the hall's SSH gateway, NetworkPolicies that admit exactly that traffic from ``ladder-system``, the
dataset egress, and the cluster-wide Gateway and SSH gateway objects; plus negative tests for the Gateway API
validator."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import jsonschema
import pytest

from provisioning.domain.workload_access import access, route_host
from provisioning.drivers.kubernetes import render
from provisioning.drivers.kubernetes.manifest import b64
from provisioning.drivers.kubernetes.render_workload import SSH_IMAGE
from provisioning.drivers.kubernetes.shapes import AllocationShape
from tests.provisioning.drivers.kubernetes.test_render import H100, TENANT, by_kind, one
from tests.provisioning.drivers.kubernetes.test_render_workload import (
    ALL,
    BARE_METAL,
    CONTAINER,
    CVM,
    JOB,
    KEY,
    SERVERLESS,
    VM,
    named,
    objects,
)
from tests.support import k8s_schemas as schemas

PARENT = {
    "group": "gateway.networking.k8s.io",
    "kind": "Gateway",
    "namespace": "ladder-system",
    "name": "ladder",
    "sectionName": "https",
}
FROM_SYSTEM = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ladder-system"}}}]


def ingress_rules(objs: list[dict[str, Any]], allocation: AllocationShape) -> list[tuple[int, str]]:
    """(port, source namespace) of every ingress rule of the allocation's own policies."""
    found = []
    for policy in by_kind(objs, "NetworkPolicy"):
        assert policy["spec"]["podSelector"] == {"matchLabels": {"ladder.io/allocation": str(allocation.id)}}
        for rule in policy["spec"].get("ingress", []):
            assert rule["from"] == FROM_SYSTEM
            found += [(p["port"], p["protocol"]) for p in rule["ports"]]
    return sorted(found)


# --- HTTPRoutes -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("allocation", [CONTAINER, JOB, VM], ids=lambda a: a.rung)
def test_a_public_port_is_an_httproute_on_the_shared_gateway(allocation: AllocationShape) -> None:
    objs = objects(allocation)
    (port,) = allocation.workload.public_ports() if allocation.workload else ()
    route = one(objs, "HTTPRoute")
    assert route["apiVersion"] == schemas.storage_version("gateway.networking.k8s.io", "HTTPRoute")
    assert route["metadata"]["name"] == f"ldr-{allocation.id}-{port.port}"
    assert route["metadata"]["namespace"] == "ladder-acme"
    assert route["spec"]["parentRefs"] == [PARENT]
    assert route["spec"]["hostnames"] == [f"ldr-{allocation.id}-{port.port}.ladder.localhost"]
    (rule,) = route["spec"]["rules"]
    (backend,) = rule["backendRefs"]
    service = named(objs, "Service", backend["name"])  # the route's Service exists and serves the port
    assert backend["port"] in [p["port"] for p in service["spec"]["ports"]]
    assert "filters" not in rule  # the tenant's own Authorization header reaches its app
    assert "ladder.io/gateway-auth" not in route["metadata"]["labels"]


@pytest.mark.parametrize("allocation", [CONTAINER, JOB, VM], ids=lambda a: a.rung)
def test_a_public_port_is_open_at_the_gateway_within_its_calls_a_minute(allocation: AllocationShape) -> None:
    """Its route's own SecurityPolicy replaces the Gateway's check (no call to Ladder per request); its
    BackendTrafficPolicy counts its calls a minute at the gateway."""
    objs = objects(replace(allocation, calls_per_minute=300))
    schemas.validate_all(objs)
    route = one(objs, "HTTPRoute")["metadata"]["name"]
    target = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route}]
    policy = one(objs, "SecurityPolicy")
    assert policy["spec"] == {"targetRefs": target, "authorization": {"defaultAction": "Allow"}}
    limits = one(objs, "BackendTrafficPolicy")["spec"]
    assert limits["targetRefs"] == target
    assert limits["rateLimit"] == {
        "type": "Local",
        "local": {"rules": [{"limit": {"requests": 300, "unit": "Minute"}}]},
    }


def test_a_running_endpoints_token_policy_checks_its_tenants_tokens() -> None:
    endpoint = replace(SERVERLESS, ladder_url="https://ladder.example.net", keys_seconds=45)
    assert "SecurityPolicy" not in [o["kind"] for o in objects(endpoint)]  # applied by the driver while it runs
    policy = render.endpoint_token_policy(endpoint)
    schemas.validate(policy)
    spec = policy["spec"]
    name = f"ldr-{endpoint.id}"
    assert policy["metadata"]["name"] == name
    assert spec["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}]
    (provider,) = spec["jwt"]["providers"]
    assert provider == {
        "name": "ladder",
        "issuer": "https://ladder.example.net",
        "audiences": [f"{name}.ladder.localhost", "endpoints.acme.ladder.localhost"],
        "remoteJWKS": {"uri": "https://ladder.example.net/api/v1/gateway/jwks/acme", "cacheDuration": "45s"},
    }
    (rule,) = spec["authorization"]["rules"]
    assert spec["authorization"]["defaultAction"] == "Deny"
    assert rule["principal"]["jwt"] == {"provider": "ladder", "claims": [{"name": "ladder_tenant", "values": ["acme"]}]}


def test_the_gateways_check_holds_a_wake_longer_than_ladder_does() -> None:
    policy, grant = render.gateway_check_policy(("ladder", "ladder-web", 80), hold_seconds=60)
    schemas.validate_all([policy, grant])
    ext = policy["spec"]["extAuth"]
    assert policy["spec"]["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ladder"}]
    assert ext["http"] == {
        "backendRefs": [{"name": "ladder-web", "namespace": "ladder", "port": 80}],
        "path": "/api/v1/gateway/authorize",
    }
    assert ext["timeout"] == "65s"
    assert ext["failOpen"] is False
    assert grant["metadata"]["namespace"] == "ladder"
    assert grant["spec"]["from"] == [
        {"group": "gateway.envoyproxy.io", "kind": "SecurityPolicy", "namespace": "ladder-system"}
    ]


def test_the_policy_validators_catch_a_wrong_field() -> None:
    policy = render.endpoint_token_policy(SERVERLESS)
    policy["spec"]["jwt"]["providers"][0]["remoteJWKS"]["cacheDurationSeconds"] = 30
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate(policy)


def test_route_hosts_are_the_urls_the_api_shows() -> None:
    for allocation in (CONTAINER, VM, SERVERLESS):
        shown = access(
            allocation_id=allocation.id,
            tenant=allocation.tenant,
            rung=allocation.rung,
            hall="fra1",
            workload=allocation.workload,
            base_domain=allocation.base_domain,
            ssh_port=22,
            endpoint_url=None,
            console_url=None,
        )
        hosts = {h for r in by_kind(objects(allocation), "HTTPRoute") for h in r["spec"]["hostnames"]}
        urls = set(shown.urls.values()) | ({shown.endpoint} if shown.endpoint else set())
        assert {f"https://{h}/" for h in hosts} == urls


def test_serverless_endpoint_needs_the_tenants_api_key_at_the_gateway() -> None:
    objs = objects(SERVERLESS)
    route = one(objs, "HTTPRoute")
    assert route["metadata"]["name"] == "ldr-203"
    assert route["metadata"]["labels"]["ladder.io/gateway-auth"] == "api-key"
    assert route["spec"]["hostnames"] == [route_host(203, "ladder.localhost")]
    assert route["spec"]["parentRefs"] == [PARENT]
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"name": "ldr-203", "port": 80}]
    # The gateway checked the key: it goes no further than the gateway.
    assert rule["filters"] == [
        {"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": ["Authorization"]}}
    ]


def test_routes_follow_the_base_domain() -> None:
    elsewhere = replace(CONTAINER, base_domain="gpu.example.net")
    route = one(render.allocation_objects(elsewhere), "HTTPRoute")
    assert route["spec"]["hostnames"] == ["ldr-201-8888.gpu.example.net"]


def test_no_route_without_a_public_port() -> None:
    assert not by_kind(objects(CVM), "HTTPRoute")
    assert not by_kind(objects(BARE_METAL), "HTTPRoute")


# --- NetworkPolicies --------------------------------------------------------------------------------------------


def test_policies_admit_exactly_the_public_ports_and_ssh_from_ladder_system() -> None:
    assert ingress_rules(objects(CONTAINER), CONTAINER) == [(2222, "TCP"), (8888, "TCP")]  # sidecar's sshd
    assert ingress_rules(objects(VM), VM) == [(22, "TCP"), (8888, "TCP")]  # the VM's own sshd
    assert ingress_rules(objects(JOB), JOB) == [(6006, "TCP")]
    assert ingress_rules(objects(SERVERLESS), SERVERLESS) == [(8080, "TCP")]
    # Ports exposed to the tenant only: allow-same-namespace already admits them; nothing is opened to others.
    assert ingress_rules(objects(CVM), CVM) == []
    assert not [p for p in by_kind(objects(CVM), "NetworkPolicy") if "Ingress" in p["spec"]["policyTypes"]]


def test_a_port_exposed_to_nobody_or_the_tenant_is_not_opened() -> None:
    assert CONTAINER.workload is not None
    ports = {p for p, _ in ingress_rules(objects(CONTAINER), CONTAINER)}
    assert 6006 not in ports  # tenant
    assert 5353 not in ports  # none


def test_datasets_open_https_out_for_the_allocations_pods_only() -> None:
    for allocation in (CONTAINER, JOB):
        egress = named(objects(allocation), "NetworkPolicy", f"ldr-{allocation.id}-egress")
        assert egress["spec"]["policyTypes"] == ["Egress"]
        assert egress["spec"]["podSelector"] == {"matchLabels": {"ladder.io/allocation": str(allocation.id)}}
        (rule,) = egress["spec"]["egress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": 443}]
        blocks = [peer["ipBlock"] for peer in rule["to"]]
        assert all("169.254.0.0/16" in b["except"] for b in blocks if b["cidr"] == "0.0.0.0/0")
    for allocation in (SERVERLESS, CVM, VM):  # no dataset: no way out
        assert not [p for p in by_kind(objects(allocation), "NetworkPolicy") if "Egress" in p["spec"]["policyTypes"]]


# --- SSH --------------------------------------------------------------------------------------------------------


def test_container_ssh_is_a_sidecar_beside_the_workload() -> None:
    objs = objects(CONTAINER)
    spec = one(objs, "Pod")["spec"]
    assert [c["name"] for c in spec["containers"]] == ["worker", "ssh"]
    assert spec["shareProcessNamespace"] is True
    ssh = spec["containers"][1]
    assert ssh["image"] == SSH_IMAGE
    assert ssh["ports"] == [{"name": "ssh", "containerPort": 2222, "protocol": "TCP"}]
    assert ssh["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "workspace", "mountPath": "/workspace"} in ssh["volumeMounts"]
    assert {"name": "workspace", "mountPath": "/workspace"} in spec["containers"][0]["volumeMounts"]
    keys = next(v for v in spec["volumes"] if v["name"] == "ssh-keys")
    assert keys["secret"]["secretName"] == "ldr-201-ssh"
    secret = named(objs, "Secret", "ldr-201-ssh")
    assert b64(KEY + "\n") == secret["data"]["authorized_keys"]

    service = named(objs, "Service", "ldr-201-ssh")
    assert service["metadata"]["labels"]["ladder.io/ssh-user"] == "ldr-201"
    assert service["metadata"]["annotations"] == {"ladder.io/ssh-authorized-keys": KEY, "ladder.io/ssh-login": "ladder"}
    assert service["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": "ssh", "protocol": "TCP"}]
    assert service["spec"]["selector"] == {"ladder.io/allocation": "201"}


def test_a_workspace_volume_is_shared_with_the_ssh_sidecar() -> None:
    assert CONTAINER.workload is not None
    volumes = (*CONTAINER.workload.volumes, replace(CONTAINER.workload.volumes[1], mount_path="/workspace"))
    mine = replace(CONTAINER, workload=replace(CONTAINER.workload, volumes=volumes[:1] + volumes[2:]))
    spec = one(render.allocation_objects(mine), "Pod")["spec"]
    assert "workspace" not in {v["name"] for v in spec["volumes"]}
    assert {"name": "vol-1", "mountPath": "/workspace"} in spec["containers"][1]["volumeMounts"]


def test_vm_ssh_reaches_the_launcher_pod() -> None:
    service = named(objects(VM), "Service", "ldr-205-ssh")
    assert service["metadata"]["labels"]["ladder.io/ssh-user"] == "ldr-205"
    assert service["metadata"]["annotations"]["ladder.io/ssh-login"] == "rocky"  # the OS image's user
    assert service["spec"]["selector"] == {"ladder.io/allocation": "205"}
    assert service["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}]
    vm = one(objects(VM), "VirtualMachine")
    assert vm["spec"]["template"]["metadata"]["labels"]["ladder.io/allocation"] == "205"  # the launcher pod's


def test_bare_metal_ssh_names_the_first_host() -> None:
    service = named(objects(BARE_METAL), "Service", "ldr-206-ssh")
    assert service["metadata"]["namespace"] == "ladder-acme"
    assert service["metadata"]["labels"]["ladder.io/ssh-user"] == "ldr-206"
    assert service["metadata"]["annotations"]["ladder.io/ssh-login"] == "ubuntu"
    assert service["spec"]["type"] == "ExternalName"
    assert service["spec"]["externalName"] == "gpu-node-20"


def test_no_ssh_without_keys_or_on_a_rung_without_ssh() -> None:
    for allocation in (JOB, SERVERLESS, CVM):
        objs = objects(allocation)
        assert not [o for o in objs if "ladder.io/ssh-user" in o["metadata"]["labels"]]
        for spec in (s for o in objs for s in schemas.pod_specs(o)):
            assert [c["name"] for c in spec["containers"]] == ["worker"]
    assert CONTAINER.workload is not None
    keyless = replace(CONTAINER, workload=replace(CONTAINER.workload, ssh_keys=()))
    objs = render.allocation_objects(keyless)
    assert "shareProcessNamespace" not in one(objs, "Pod")["spec"]
    assert ingress_rules(objs, keyless) == [(8888, "TCP")]


def test_every_ssh_route_is_unique_per_allocation() -> None:
    users = [
        o["metadata"]["labels"]["ladder.io/ssh-user"]
        for a in ALL
        for o in objects(a)
        if "ladder.io/ssh-user" in o["metadata"]["labels"]
    ]
    assert users == ["ldr-201", "ldr-205", "ldr-206"]


# --- once per cluster -------------------------------------------------------------------------------------------


def test_cluster_setup_has_the_gateway_and_the_ssh_gateway() -> None:
    objs = render.cluster_setup([H100], base_domain="gpu.example.net")
    schemas.validate_all(objs)
    gateway = one(objs, "Gateway")
    assert (gateway["metadata"]["name"], gateway["metadata"]["namespace"]) == ("ladder", "ladder-system")
    (listener,) = gateway["spec"]["listeners"]
    assert (listener["name"], listener["protocol"], listener["port"]) == ("https", "HTTPS", 443)
    assert listener["hostname"] == "*.gpu.example.net"
    assert listener["tls"] == {
        "mode": "Terminate",
        "certificateRefs": [{"group": "", "kind": "Secret", "name": "ladder-gateway-tls"}],
    }
    assert listener["allowedRoutes"]["namespaces"] == {
        "from": "Selector",
        "selector": {"matchLabels": {"app.kubernetes.io/managed-by": "ladder"}},
    }
    # Every tenant namespace is one the Gateway takes routes from.
    ns = one(render.namespace_set(TENANT), "Namespace")
    assert ns["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ladder"

    ssh = named(objs, "Service", "ladder-ssh-gateway")
    assert ssh["metadata"]["namespace"] == "ladder-system"
    assert ssh["spec"]["type"] == "LoadBalancer"
    assert ssh["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": "ssh", "protocol": "TCP"}]
    role = one(objs, "ClusterRole")
    assert {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "list", "watch"]} in role["rules"]
    assert all("secrets" not in r["resources"] for r in role["rules"])  # it never reads a tenant's Secret
    binding = one(objs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "ladder-ssh-gateway", "namespace": "ladder-system"}
    ]
    assert one(render.cluster_setup([H100]), "Gateway")["spec"]["listeners"][0]["hostname"] == "*.ladder.localhost"


# --- the Gateway API validator catches wrong fields -------------------------------------------------------------


def test_gateway_api_validator_catches_a_wrong_field() -> None:
    route = one(objects(SERVERLESS), "HTTPRoute")
    schemas.validate_gateway_api(route)
    bad = copy.deepcopy(route)
    bad["spec"]["parentRef"] = bad["spec"].pop("parentRefs")
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_gateway_api(bad)
    bad = copy.deepcopy(route)
    bad["spec"]["rules"][0]["filters"][0]["type"] = "ExternalAuth"  # experimental channel only
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_gateway_api(bad)
    bad = copy.deepcopy(route)
    bad["spec"]["hostnames"] = ["LDR-203.ladder.localhost"]
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_gateway_api(bad)
    bad = copy.deepcopy(route)
    bad["apiVersion"] = "gateway.networking.k8s.io/v1alpha2"
    with pytest.raises(schemas.ManifestError, match="does not serve"):
        schemas.validate_gateway_api(bad)
    bad = copy.deepcopy(route)
    bad["kind"] = "TCPRoute"  # not in the standard channel's CRDs kept here
    with pytest.raises(schemas.ManifestError, match="no Gateway API CRD"):
        schemas.validate_gateway_api(bad)

    gateway = one(render.cluster_setup([H100]), "Gateway")
    bad = copy.deepcopy(gateway)
    bad["spec"]["listeners"][0]["tls"]["mode"] = "Terminated"
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_gateway_api(bad)
    bad = copy.deepcopy(gateway)
    bad["spec"]["listeners"][0]["allowedRoutes"]["namespaces"]["selectors"] = {}
    with pytest.raises(jsonschema.ValidationError):
        schemas.validate_gateway_api(bad)


def test_a_route_outside_the_gateways_group_is_refused() -> None:
    route = copy.deepcopy(one(objects(SERVERLESS), "HTTPRoute"))
    route["apiVersion"] = "networking.k8s.io/v1"
    with pytest.raises(schemas.ManifestError, match="not in group"):
        schemas.validate_gateway_api(route)
