"""Helpers for tests of volumes as governed data: a volume made through the API on the simulated fleet (the
backend's step run on commit), work that mounts it, its directory, and moving a volume's asset back in time."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from compliance.models import DataAsset
from provisioning.drivers.base import allocations_reconcile
from provisioning.models import Volume

VOLUMES = "/api/v1/volumes"
IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"


def volume_make(client: Any, capture: Any, **body: Any) -> dict[str, Any]:
    """A volume made through the API and read once the simulated backend has it (``available``)."""
    body.setdefault("name", "datasets")
    body.setdefault("region", "eu-west")
    body.setdefault("kind", "filesystem")
    body.setdefault("size_gb", 500)
    with capture(execute=True):
        response = client.post(VOLUMES, body, format="json")
    assert response.status_code == 201, response.content
    fresh: dict[str, Any] = client.get(f"{VOLUMES}/{response.json()['id']}").json()
    assert fresh["state"] == "available", fresh
    return fresh


def volume_state(client: Any, volume_id: int) -> str:
    state: str = client.get(f"{VOLUMES}/{volume_id}").json()["state"]
    return state


def volume_dir(volume_id: int) -> Path:
    """Where the simulated fleet keeps the volume (what work mounting it sees)."""
    volume = Volume.objects.select_related("tenant").get(pk=volume_id)
    return Path(settings.LADDER_SIM_VOLUME_DIR) / volume.tenant.slug / volume.backend_name


def volume_made_at(volume_id: int, at: datetime) -> None:
    """The volume (and its asset, which retention and holds judge by) as if made at ``at``."""
    Volume.objects.filter(pk=volume_id).update(created_at=at)
    DataAsset.objects.filter(volume_id=volume_id).update(created_at=at)


def mount(client: Any, capture: Any, volume_id: int, *, name: str = "training") -> dict[str, Any]:
    """A running container that mounts the volume at ``/data``."""
    body = {
        "name": name,
        "rung": "container",
        "gpu_model": "H100-SXM-80GB",
        "gpus": 1,
        "workload": {"image": IMAGE, "volumes": [{"volume": volume_id, "mount_path": "/data"}]},
    }
    with capture(execute=True):
        response = client.post("/api/v1/allocations", body, format="json")
    assert response.status_code == 201, response.content
    placed: dict[str, Any] = response.json()
    return placed


def stop(client: Any, capture: Any, allocation_id: int) -> None:
    """Stop the work and let reconciliation see it end (its mounts are released)."""
    with capture(execute=True):
        response = client.delete(f"/api/v1/allocations/{allocation_id}")
    assert response.status_code in (200, 202), response.content
    allocations_reconcile()
