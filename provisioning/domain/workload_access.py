"""How a tenant reaches its allocation, by rung: SSH through its hall's SSH gateway, a serverless endpoint, a URL
per public port, a VM's serial console. Pure: the hostnames follow from the allocation, its hall and the base
domain."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from provisioning.domain.workloads import SSH_PORT, Workload, WorkloadSpec


@dataclass(frozen=True)
class Ssh:
    host: str
    port: int
    user: str
    command: str


@dataclass(frozen=True)
class Access:
    """How the tenant reaches its allocation: ``ssh`` through the hall's SSH gateway, ``endpoint`` for serverless,
    ``urls`` per public port, ``console`` to follow a VM's serial console."""

    ssh: Ssh | None = None
    endpoint: str | None = None
    urls: dict[int, str] = field(default_factory=dict)
    console: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ssh": asdict(self.ssh) if self.ssh else None,
            "endpoint": self.endpoint,
            "urls": {str(port): url for port, url in sorted(self.urls.items())},
            "console": self.console,
        }


def route_host(allocation_id: int, base_domain: str, port: int | None = None) -> str:
    """The public hostname of an allocation's endpoint (or of one of its ports) under the base domain."""
    label = f"ldr-{allocation_id}" if port is None else f"ldr-{allocation_id}-{port}"
    return f"{label}.{base_domain}"  # one label under the base domain: a single wildcard certificate covers all


def ssh_host(hall: str, base_domain: str) -> str:
    return f"ssh.{hall}.{base_domain}"


def ssh_user(allocation_id: int) -> str:
    """The gateway routes by user: ``ldr-<id>`` reaches allocation <id>'s SSH, as the image's own user."""
    return f"ldr-{allocation_id}"


def access(
    *,
    allocation_id: int,
    tenant: str,
    rung: str,
    hall: str,
    workload: Workload | None,
    base_domain: str,
    ssh_port: int,
    endpoint_url: str | None,
    console_url: str | None,
) -> Access:
    """The access details of one allocation. ``endpoint_url`` is where the driver serves a serverless endpoint
    (None: the gateway's hostname); ``console_url`` where a VM's console is followed."""
    w = workload or Workload()
    spec = WorkloadSpec.of(rung, workload)
    ssh = None
    if spec.takes_ssh:
        host, user = ssh_host(hall, base_domain), ssh_user(allocation_id)
        command = f"ssh {user}@{host}" if ssh_port == SSH_PORT else f"ssh -p {ssh_port} {user}@{host}"
        ssh = Ssh(host=host, port=ssh_port, user=user, command=command)
    urls = {p.port: f"https://{route_host(allocation_id, base_domain, p.port)}/" for p in w.public_ports()}
    endpoint = None
    if spec.facts.endpoint:
        endpoint = endpoint_url or f"https://{route_host(allocation_id, base_domain)}/"
        urls = {}  # the endpoint is the serverless rung's one public port
    return Access(ssh=ssh, endpoint=endpoint, urls=urls, console=console_url if spec.facts.serial_console else None)
