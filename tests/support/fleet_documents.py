"""Fleet documents for tests: a small valid fleet, and builders to bend one part of it."""

from __future__ import annotations

import copy
import json
from typing import Any

VERSIONS = {"driver": "580.65.06", "cuda": "13.0", "nccl": "2.27.7", "firmware": "96.00.B1.00.01"}


def node(hostname: str, domain: str, model: str = "H100-SXM-80GB", gpus: int = 8, **extra: Any) -> dict[str, Any]:
    return {
        "hostname": hostname,
        "gpu_model": model,
        "gpu_count": gpus,
        "nvlink_domain": domain,
        "cc_capable": False,
        "versions": dict(VERSIONS),
        **extra,
    }


def one_hall(*nodes: dict[str, Any]) -> dict[str, Any]:
    """A fleet of one EU hall, ``eu-west-1a``, with these nodes."""
    hall = {"code": "eu-west-1a", "fenced_for": None, "nodes": list(nodes)}
    return {"regions": [{"code": "eu-west", "name": "EU West", "jurisdiction": "EU", "halls": [hall]}]}


def small_fleet() -> dict[str, Any]:
    """Two regions, three halls (one fenced for EU), five nodes, 36 GPUs."""
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
                            node("euw1a-03", "eu-west-1a/nvl-1", gpus=4),
                        ],
                    },
                    {
                        "code": "eu-west-1b",
                        "fenced_for": "EU",
                        "nodes": [
                            node(
                                "euw1b-01",
                                "eu-west-1b/nvl-0",
                                "H200-141GB",
                                cc_capable=True,
                                cc_mode=True,
                                cpu_tee="tdx",
                            ),
                        ],
                    },
                ],
            },
            {
                "code": "us-east",
                "name": "US East",
                "jurisdiction": "US",
                "halls": [
                    {
                        "code": "us-east-1a",
                        "fenced_for": None,
                        "nodes": [node("use1a-01", "us-east-1a/nvl-0", "H200-141GB")],
                    },
                ],
            },
        ]
    }


def skewed_fleet() -> dict[str, Any]:
    """The small fleet with two more nodes in eu-west-1a and versions that differ inside its NVLink domains: in nvl-0
    (euw1a-01, -02, -04) the first node runs an older driver than the two others and euw1a-02 an older CUDA; in
    nvl-1 (euw1a-03, -05) the two nodes run different NCCLs, one each."""
    document = small_fleet()
    nodes = document["regions"][0]["halls"][0]["nodes"]
    nodes += [node("euw1a-04", "eu-west-1a/nvl-0"), node("euw1a-05", "eu-west-1a/nvl-1", gpus=4)]
    nodes[0]["versions"]["driver"] = "570.10.01"
    nodes[1]["versions"]["cuda"] = "12.9"
    nodes[4]["versions"]["nccl"] = "2.26.2"
    return document


SMALL_FLEET_NODES = 5
SMALL_FLEET_GPUS = 8 + 8 + 4 + 8 + 8


def changed(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the value at ``regions.0.halls.1.code``-style ``path`` replaced (or, with
    ``value`` ``DELETE``, removed)."""
    out = copy.deepcopy(document)
    *parents, last = path.split(".")
    target: Any = out
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    key: Any = int(last) if isinstance(target, list) else last
    if value is DELETE:
        del target[key]
    else:
        target[key] = value
    return out


DELETE = object()


def pretty(document: Any) -> str:
    """The document as an operator would write it: indented, one key per line."""
    return json.dumps(document, indent=2)
