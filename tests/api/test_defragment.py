"""/api/v1/ops/defragment carries its plan out: one move at a time, each checked again when its turn comes,
audited, the moved job billed up to its checkpoint and running again on the planned devices."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from billing.models import UsageInterval
from core.models import AuditEvent
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.fleet_cache import FLEET, placement_section
from provisioning.models import Allocation, DefragmentRun, Node
from provisioning.services.defragment import defragment_advance
from provisioning.services.fleet import fleet_load, node_drain
from provisioning.tasks import defragment_runs_advance
from tests.support import SYSTEM, assert_problem
from tests.support.fleet_documents import small_fleet

URL = "/api/v1/ops/defragment"
H100 = "H100-SXM-80GB"
SIMULATED = SimulatedProvisioner().last_checkpoint


@pytest.fixture
def fleet(db):
    """The small fleet, every node stating its host: a moved allocation's CPU and memory move with it."""
    document = small_fleet()
    for region in document["regions"]:
        for hall in region["halls"]:
            for node in hall["nodes"]:
                node["host"] = {"cpu_cores": 192, "memory_gib": 2048}
    return fleet_load(document=document, actor=SYSTEM)


def host_use() -> dict[str, tuple[int, int]]:
    """Each node's CPU and memory in use, as this process holds it."""
    with placement_section():
        return {n.hostname: (n.cpu_used, n.memory_used) for n in FLEET.state.nodes.values()}


def ask(client, **body):
    body.setdefault("name", "work")
    body.setdefault("rung", "container")
    body.setdefault("gpu_model", H100)
    response = client.post("/api/v1/allocations", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def nodes_of(allocation_id):
    return {d.hostname for d in Allocation.objects.get(pk=allocation_id).devices.filter(active=True)}


@pytest.fixture
def scattered(api, alice, fleet, settings, django_capture_on_commit_callbacks):
    """A container fills most of one node, a job sits alone on another: moving the job frees a whole node."""
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    client = api(alice)
    with django_capture_on_commit_callbacks(execute=True):
        box = ask(client, gpus=6)
        filler = ask(client, gpus=2)  # the box's node is full, so the job goes elsewhere
        job = ask(client, rung="job", gpus=2)
        client.delete(f"/api/v1/allocations/{filler['id']}")
    assert nodes_of(job["id"]).isdisjoint(nodes_of(box["id"]))
    assert Allocation.objects.get(pk=job["id"]).state == "running"
    return box, job


def test_it_plans_then_moves_a_job_onto_the_fuller_node(api, operator, scattered, django_capture_on_commit_callbacks):
    box, job = scattered
    plan = api(operator).post(URL, {"dry_run": True}, format="json").json()
    assert [(m["allocation"], m["kind"], m["gpus"]) for m in plan["moves"]] == [(job["id"], "job", 2)]
    assert plan["moves"][0]["to_nodes"] == sorted(nodes_of(box["id"]))
    assert not DefragmentRun.objects.exists()  # a plan changes nothing

    with django_capture_on_commit_callbacks(execute=True):
        started = api(operator).post(URL, {"dry_run": False}, format="json")
    assert started.status_code == 202, started.content
    run = started.json()
    assert started["Location"] == f"{URL}/{run['id']}"
    assert nodes_of(job["id"]) == nodes_of(box["id"])  # moved at once; it runs again once provisioned
    step = api(operator).get(f"{URL}/{run['id']}").json()["steps"][0]
    assert (step["allocation"], step["status"]) == (job["id"], "moving")

    used = host_use()  # the job's CPU and memory moved with it, as a process reading the database finds them
    assert used[min(nodes_of(box["id"]))] == (8000 * 8, 65536 * 8)  # the box's 6 GPUs and the job's 2
    FLEET.invalidate()
    assert host_use() == used
    defragment_runs_advance()  # the beat sees it running again
    run = api(operator).get(f"{URL}/{run['id']}").json()
    assert run["state"] == "done"
    assert run["steps"][0]["status"] == "done"
    assert run["steps"][0]["finished_at"]
    assert Allocation.objects.get(pk=job["id"]).state == "running"
    assert api(operator).post(URL, {"dry_run": True}, format="json").json()["moves"] == []  # nothing left to gain

    actions = list(AuditEvent.objects.filter(action__startswith="defragment.").values_list("action", flat=True))
    assert actions == ["defragment.started", "defragment.done"]
    moved = AuditEvent.objects.get(action="allocation.moved")
    assert moved.target_id == str(job["id"])
    assert moved.data["to"] == sorted(nodes_of(box["id"]))


@override_settings(LADDER_SIM_CHECKPOINT_SECONDS=600)
def test_a_moved_job_is_billed_up_to_its_checkpoint(api, operator, scattered, django_capture_on_commit_callbacks):
    _, job = scattered
    allocation = Allocation.objects.get(pk=job["id"])
    checkpoint = SIMULATED(allocation, timezone.now())
    assert checkpoint is not None
    with django_capture_on_commit_callbacks(execute=True):
        api(operator).post(URL, {"dry_run": False}, format="json")
    intervals = list(UsageInterval.objects.filter(allocation_id=job["id"]).order_by("start_ms"))
    # Closed at the move (the ledger may have cut it at an hour too), open again since it runs on the new node.
    ends = [i.end_ms for i in intervals if i.end_ms is not None]
    (reopened,) = [i for i in intervals if i.end_ms is None]
    assert max(ends) == int(checkpoint.timestamp() * 1000)
    assert reopened.start_ms >= int(checkpoint.timestamp() * 1000)


def test_one_run_at_a_time_and_a_step_waits_for_its_move(
    api, operator, scattered, settings, django_capture_on_commit_callbacks
):
    _, job = scattered
    settings.LADDER_SIM_PROVISION_SECONDS = 3600
    with django_capture_on_commit_callbacks(execute=True):
        run = api(operator).post(URL, {"dry_run": False}, format="json").json()
    assert Allocation.objects.get(pk=job["id"]).state == "restarting"  # still coming up on its new node
    assert_problem(api(operator).post(URL, {"dry_run": False}, format="json"), 409, "defragment_running")
    defragment_runs_advance()
    assert api(operator).get(f"{URL}/{run['id']}").json()["steps"][0]["status"] == "moving"
    # It fails on its new node: the run stops there for an operator to look.
    Allocation.objects.filter(pk=job["id"]).update(state="failed", failure_reason="image pull failed")
    later = timezone.now() + timedelta(minutes=1)
    finished = defragment_advance(run_id=run["id"], last_checkpoint=SIMULATED, now=later)
    assert finished.state == "failed"
    assert "image pull failed" in finished.steps[0]["detail"]
    assert AuditEvent.objects.filter(action="defragment.failed").count() == 1


def test_a_step_no_longer_sound_is_skipped_and_nothing_moves(
    api, operator, scattered, django_capture_on_commit_callbacks
):
    _, job = scattered
    before = nodes_of(job["id"])
    with django_capture_on_commit_callbacks(execute=False):  # the run is stored; its first step has not run
        run = api(operator).post(URL, {"dry_run": False}, format="json").json()
    assert run["steps"][0]["status"] == "pending"
    target = run["steps"][0]["to_nodes"][0]
    node_drain(node=Node.objects.get(hostname=target), actor=SYSTEM, reason="fan swap")  # meanwhile
    finished = defragment_advance(run_id=run["id"], last_checkpoint=SIMULATED)
    assert finished.state == "done"
    assert finished.steps[0]["status"] == "skipped"
    assert finished.steps[0]["detail"] == f"{target} no longer takes this work"
    assert nodes_of(job["id"]) == before
    assert Allocation.objects.get(pk=job["id"]).state == "running"
    assert not AuditEvent.objects.filter(action="allocation.moved").exists()


def test_only_operators_see_and_carry_out_plans(api, alice, operator, finance, fleet):
    assert_problem(api(alice).post(URL, {"dry_run": False}, format="json"), 403, "permission_denied")
    assert_problem(api(finance).post(URL, {"dry_run": True}, format="json"), 403, "permission_denied")
    assert_problem(api(alice).get(URL), 403, "permission_denied")
    assert_problem(api(operator).post(URL, {}, format="json"), 422, "validation_error")
    assert_problem(api(operator).get(f"{URL}/999"), 404, "not_found")
    run = api(operator).post(URL, {"dry_run": False}, format="json").json()
    assert run["state"] == "running"
    assert run["steps"] == []
    defragment_runs_advance()
    listed = api(operator).get(URL).json()
    assert [r["state"] for r in listed["results"]] == ["done"]
