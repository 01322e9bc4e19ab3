"""What the benchmarks that run Ladder whole share: a Django of their own on a temporary SQLite database, and a
hall whose cluster is the in-process fake Kubernetes API server (``tests/fakes/kubernetes.py``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

TOKEN = "bench-token"  # noqa: S105 - the in-process fake API server's, nothing real
HALL = "bench-1a"


def django_setup(database: str, *, provisioner: str) -> None:
    """Django on a fresh SQLite file, migrated; tasks inline, quiet logs."""
    os.environ.update(
        DATABASE_URL=f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="config.settings_test",
        LADDER_PROVISIONER=provisioner,
        LADDER_TASKS_INLINE="1",
        LOG_LEVEL="ERROR",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def hall_load(server: Any, nodes: Sequence[dict[str, Any]], actor: Any) -> None:
    """The hall ``bench-1a`` of region ``bench`` with ``nodes`` (fleet-document entries), every shape it offers
    priced (nothing runs without a price), its cluster the fake API server, and every host a Ready Node there."""
    from provisioning.drivers.kubernetes.clusters import cluster_register
    from provisioning.models import GpuModel, Hall, Region
    from provisioning.services.fleet import fleet_load
    from tests.support.billing import price_pool

    hall = {"code": HALL, "fenced_for": None, "nodes": list(nodes)}
    fleet_load(
        document={"regions": [{"code": "bench", "name": "Bench", "jurisdiction": "EU", "halls": [hall]}]}, actor=actor
    )
    for model in GpuModel.objects.filter(name__in={n["gpu_model"] for n in nodes}):
        price_pool(model, Region.objects.get(code="bench"))
    cluster_register(
        name="bench", hall=Hall.objects.get(code=HALL), api_server=server.url, credentials={"token": TOKEN}, actor=actor
    )
    since = datetime.now(UTC).isoformat()
    for node in nodes:
        host = node["hostname"]
        server.put_object(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": host, "labels": {"kubernetes.io/hostname": host}},
                "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}]},
            }
        )
