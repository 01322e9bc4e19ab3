"""A volume's whole life is in the audit chain: made, provisioned, grown, renamed, snapshotted, mounted by work and
let go, deleted, its key shredded and the volume removed, each event by whoever did it; the chain verifies, and
compliance staff find the events by target and by action, through the API and in the console."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from compliance.selectors import audit_chain_verify
from compliance.services.assets import shred_wait
from compliance.services.sweep import retention_sweep
from tests.support.consoles import signed_in
from tests.support.data import regions
from tests.support.volumes import VOLUMES, mount, stop, volume_make, volume_state

EVENTS = "/api/v1/compliance/audit-events"


@pytest.fixture
def fleet(db: None) -> Any:
    return regions()


def events(officer: Any, **filters: str) -> list[dict[str, Any]]:
    """The events the filters name, oldest first."""
    response = officer.get(EVENTS, filters)
    assert response.status_code == 200, response.content
    assert response.json()["next"] is None
    found: list[dict[str, Any]] = response.json()["results"]
    return found[::-1]


def test_a_volumes_life_is_audited_in_the_chain_and_found_by_target_and_action(
    api: Any, alice: Any, compliance: Any, fleet: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = api(alice)
    capture = django_capture_on_commit_callbacks
    volume = volume_make(client, capture)
    url = f"{VOLUMES}/{volume['id']}"
    assert client.patch(url, {"size_gb": 800}, format="json").status_code == 200
    assert client.patch(url, {"name": "corpus"}, format="json").status_code == 200
    with capture(execute=True):
        snapshot = client.post(f"{url}/snapshots", {"name": "s1"}, format="json").json()
    work = mount(client, capture, volume["id"])
    stop(client, capture, work["id"])
    with capture(execute=True):
        assert client.delete(url).status_code == 202
    with capture(execute=True):
        retention_sweep(now=timezone.now() + shred_wait() + timedelta(seconds=1))
    assert volume_state(client, volume["id"]) == "deleted"

    officer = api(compliance)
    life = events(officer, target=f"volume:{volume['id']}")
    assert [(e["action"], e["actor_label"]) for e in life] == [
        ("volume.created", "alice"),
        ("volume.available", "provisioner"),
        ("volume.grown", "alice"),
        ("volume.renamed", "alice"),
        ("volume.attached", "alice"),
        ("volume.detached", "provisioner"),  # reconciliation saw the work end
        ("volume.deleting", "volumes"),
        ("volume.deleted", "provisioner"),
    ]
    assert life[0]["data"] == {"name": "datasets", "region": "eu-west", "kind": "filesystem", "size_gb": 500}
    # Updates read as changes in the log, transitions as a change of state.
    assert life[2]["changes"] == [{"field": "size_gb", "old": 500, "new": 800}]
    assert life[3]["changes"] == [{"field": "name", "old": "datasets", "new": "corpus"}]
    assert life[4]["data"] == {
        "allocation": work["id"],
        "mount_path": "/data",
        "read_only": False,
        "from": "available",
        "to": "attached",
    }
    assert life[4]["changes"] == [{"field": "state", "old": "available", "new": "attached"}]
    assert life[5]["data"] == {"allocation": work["id"], "from": "attached", "to": "available"}
    assert life[6]["data"]["reason"] == "delete"
    assert {e["tenant"] for e in life} == {"acme"}

    assert [e["action"] for e in events(officer, target=f"volume_snapshot:{snapshot['id']}")] == [
        "volume_snapshot.created",
        "volume_snapshot.ready",
        "volume_snapshot.deleting",
        "volume_snapshot.deleted",
    ]
    asset = events(officer, target=f"data_asset:{volume['data_asset']}")
    assert [e["action"] for e in asset] == ["data_asset.created", "data_asset.shred_scheduled", "data_asset.shredded"]
    assert asset[0]["data"]["volume"] == volume["id"]
    assert asset[2]["data"]["key_id"] == volume["key_id"]
    assert asset[2]["data"]["method"] == "crypto-shredding: wrapped data key destroyed"
    # The key is destroyed before the volume is removed.
    assert asset[2]["seq"] < life[-1]["seq"]

    by_action = events(officer, action="volume.", tenant="acme")
    assert [e["action"] for e in by_action] == [e["action"] for e in life]
    assert {e["action"] for e in events(officer, action="volume")} >= {"volume.created", "volume_snapshot.ready"}

    verified = officer.get(f"{EVENTS}/verify").json()
    assert verified["ok"] is True
    assert audit_chain_verify().ok

    console = signed_in(compliance)
    page = console.get("/console/compliance/", {"target": f"volume:{volume['id']}"}).content.decode()
    for action in ("volume.created", "volume.attached", "volume.detached", "volume.deleting", "volume.deleted"):
        assert action in page
    assert "volume_snapshot." not in page
    snapshots = console.get("/console/compliance/", {"action": "volume_snapshot.", "tenant": "acme"}).content.decode()
    assert "volume_snapshot.deleted" in snapshots
    assert "volume.created" not in snapshots
