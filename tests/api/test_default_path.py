"""``make run``'s settings, end to end: every rung and shape through the real API on the demo world.

``make run`` serves SQLite with ``LADDER_TASKS_INLINE=1`` and ``DEBUG=1`` after ``seed_demo``: Celery tasks run
in-process, and a task queued with ``transaction.on_commit`` runs when the request's transaction really commits.
The rest of the suite runs those callbacks at the end of a ``django_capture_on_commit_callbacks`` block, never at
the commit itself, so it cannot see what happens there. These tests use a transactional database (real commits,
callbacks run by Django where they would run in production), eager Celery, the simulated provisioner with no
delays, and the demo world loaded by ``seed_demo`` itself (seeded once per session on SQLite and copied back for
each test), served by a process that reads the fleet afresh, as ``runserver`` does after ``seed_demo``.

For each shape: no 5xx, every allocation reaches ``running``, its devices read back as they were placed and as
the database claims them, the process's in-memory fleet equals one rebuilt from the database, and stopping gives
everything back (the fleet is again what it was before the shape was asked for).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient
from time_machine import TimeMachineFixture

from billing.models import PushState, UsageInterval, UsageRollup
from compliance.selectors import audit_chain_verify
from config.celery import app
from lifecycle.management.commands.seed_demo import DEMO_ALLOCATIONS
from provisioning.domain.node_host import bundled
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.engine import PlacementEngine
from provisioning.domain.placement.mig import GEOMETRY, MEMORY_SLICES
from provisioning.domain.rungs import RUNGS, Rung
from provisioning.fleet_cache import FLEET, FleetCache, fleet_read
from provisioning.models import Allocation, GpuClaim, Node, NodeHold, Volume

# seed_demo's own price book must price every shape the demo runs and offers: the suite's default one stays out.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.own_price_book]

URL = "/api/v1/allocations"
H100, H200 = "H100-SXM-80GB", "H200-141GB"
SOVEREIGN_EU = {"residency": {"regions": None, "jurisdictions": ["EU"], "sovereign": True}}


# --- the demo world, as make run builds it ------------------------------------------------------------------------


@dataclass
class Demo:
    seeded: dict[str, Any]

    def client(self, username: str) -> APIClient:
        """A client carrying the API key ``seed_demo`` printed for ``username``."""
        people = dict(self.seeded["staff"])
        for tenant in self.seeded["tenants"].values():
            people.update(tenant["users"])
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {people[username]['api_key']}")
        return client


# The database seed_demo leaves, kept once per session on SQLite (the backend make run uses): copying it back
# costs milliseconds, seeding costs seconds. The first test seeds for real; on PostgreSQL every test does.
_SEEDED: dict[str, Any] = {}


def _seed(time_machine: TimeMachineFixture) -> dict[str, Any]:
    if connection.vendor != "sqlite":
        return _run_seed_demo()
    connection.ensure_connection()
    live = connection.connection
    if not _SEEDED:
        seeded = _run_seed_demo()
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        live.backup(copy)
        _SEEDED.update(database=copy, output=seeded, at=timezone.now())
    else:
        _SEEDED["database"].backup(live)
        # Under a moved clock every test starts at the same instant, before the moment the copied rows were
        # written by an earlier test: go on from that moment, as a server started after seed_demo would.
        if timezone.now() < _SEEDED["at"]:
            time_machine.move_to(_SEEDED["at"])
    return dict(_SEEDED["output"])


def _run_seed_demo() -> dict[str, Any]:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)  # DEBUG is on, as under make run: no --force
    seeded: dict[str, Any] = json.loads(out.getvalue())
    assert seeded["allocations"] == 6  # one workload on most rungs (lifecycle/management/commands/seed_demo.py)
    return seeded


@pytest.fixture
def demo(settings: Any, time_machine: TimeMachineFixture) -> Iterator[Demo]:
    """``make run``: DEBUG and inline tasks, ``seed_demo``, then a server process that has not looked at the fleet
    yet; the simulated provisioner without its delays."""
    settings.DEBUG = True
    settings.LADDER_TASKS_INLINE = True
    settings.LADDER_PROVISIONER = "simulated"
    settings.LADDER_SIM_PROVISION_SECONDS = 0
    settings.LADDER_SIM_SANITIZE_SECONDS = 0
    # What config/settings.py derives from LADDER_TASKS_INLINE, set on the app itself (it read its settings once).
    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    try:
        seeded = _seed(time_machine)
        assert set(Allocation.objects.values_list("state", flat=True)) == {"running"}
        FLEET.invalidate()  # runserver is another process than seed_demo: it reads the fleet on first use
        FLEET.seq = 0
        yield Demo(seeded)
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = saved


# --- what the fleet looks like, in memory and in the database ---------------------------------------------------


def picture(engine: PlacementEngine) -> dict[str, Any]:
    """Everything the engine decides on, in plain values: GPUs, hosts, quotas and every index."""
    state = engine.state

    def where(gpu: Any) -> tuple[str, int]:
        return (gpu.node.hostname, gpu.index)

    return {
        "gpus": {
            where(g): (
                g.whole_tenant,
                g.mig,
                dict(+g.mig_tenants),
                g.mig_dedicated,
                g.soft_tenant,
                g.soft_mode,
                g.soft_used,
            )
            for n in state.nodes.values()
            for g in n.gpus
        },
        "nodes": {n.hostname: (n.state, n.holder, n.cpu_used, n.memory_used) for n in state.nodes.values()},
        "tenant_milli": {t: m for t, m in state.tenant_milli.items() if m},
        "domain_free": {d: f for d, f in state.domain_free.items() if f},
        "by_free": {
            key: [sorted(n.hostname for n in bucket.values()) for bucket in buckets]
            for key, buckets in state.by_free.items()
        },
        "mig_by_state": {
            key: {s: sorted(where(g) for g in gpus.values()) for s, gpus in groups.items() if gpus}
            for key, groups in state.mig_by_state.items()
            if groups
        },
        "soft_pools": {
            key: sorted((where(g), g.soft_used) for g in pool.gpus())
            for key, pool in state.soft_pools.items()
            if any(True for _ in pool.gpus())
        },
    }


def in_memory() -> dict[str, Any]:
    """The fleet this process decides on (brought up to date with the journal, as a decision would)."""
    with fleet_read() as cache:
        assert cache.engine is not None
        return picture(cache.engine)


def from_database() -> dict[str, Any]:
    """The fleet as a process starting now would build it."""
    with transaction.atomic():
        return picture(FleetCache().sync(0))


def assert_fleet_consistent(what: str) -> dict[str, Any]:
    memory = in_memory()
    assert memory == from_database(), f"{what}: the in-memory fleet differs from the database's"
    return memory


# --- the matrix -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    id: str
    body: dict[str, Any]
    count: int = 1  # allocations of this shape asked for, one after the other
    tenant: dict[str, Any] | None = None  # PATCH /api/v1/tenant first (e.g. sovereign EU for the CC host)
    check: Callable[[list[dict[str, Any]]], None] | None = field(default=None, compare=False)


def _nodes(devices: list[dict[str, Any]]) -> set[str]:
    return {d["node"] for d in devices}


def one_node(allocations: list[dict[str, Any]]) -> None:
    for a in allocations:
        assert len(_nodes(a["devices"])) == 1


def one_nvlink_domain(allocations: list[dict[str, Any]]) -> None:
    for a in allocations:
        domains = set(Node.objects.filter(hostname__in=_nodes(a["devices"])).values_list("nvlink_domain", flat=True))
        assert len(domains) == 1, domains


def spans_nodes(count: int) -> Callable[[list[dict[str, Any]]], None]:
    def check(allocations: list[dict[str, Any]]) -> None:
        for a in allocations:
            assert len(_nodes(a["devices"])) == count, _nodes(a["devices"])

    return check


def on_cc_hosts(allocations: list[dict[str, Any]]) -> None:
    for a in allocations:
        assert set(Node.objects.filter(hostname__in=_nodes(a["devices"])).values_list("cc_mode", flat=True)) == {True}


def whole_hosts(allocations: list[dict[str, Any]]) -> None:
    for a in allocations:
        held = set(NodeHold.objects.filter(allocation_id=a["id"]).values_list("node__hostname", flat=True))
        assert held == _nodes(a["devices"])
        assert len(a["devices"]) == 8 * len(held)


def slices_packed(allocations: list[dict[str, Any]]) -> None:
    """Several slices of one profile: no two share a memory slice, and more than one start got used."""
    used: dict[str, set[int]] = {}
    starts: set[int] = set()
    for a in allocations:
        (device,) = a["devices"]
        kind = CATALOG[a["gpu_model"]].mig_profiles[device["mig_profile"]]
        run = set(range(device["mig_start"], device["mig_start"] + GEOMETRY[kind].memory))
        taken = used.setdefault(device["gpu_uuid"], set())
        assert not taken & run, f"{device} overlaps another slice"
        taken |= run
        starts.add(device["mig_start"])
    if GEOMETRY[kind].max_per_gpu > 1:
        assert len(starts) > 1, starts


def one_shared_gpu(allocations: list[dict[str, Any]]) -> None:
    """The tenant's shares of one mode fill its own shared GPU before another is taken."""
    assert len({a["devices"][0]["gpu_uuid"] for a in allocations}) == 1


def mig_shapes() -> list[Shape]:
    """Every MIG profile of the demo fleet's models; as many of each as one GPU holds (at least two)."""
    shapes = []
    for model in (H100, H200):
        for profile, kind in CATALOG[model].mig_profiles.items():
            count = max(2, GEOMETRY[kind].max_per_gpu)
            shapes.append(
                Shape(
                    f"container-mig-{profile}-x{count}-{model}",
                    {"rung": "container", "gpu_model": model, "mig_profile": profile},
                    count=count,
                    check=slices_packed,
                )
            )
    return shapes


def share(mode: str, fraction: str, model: str = H200) -> dict[str, Any]:
    return {"rung": "serverless", "gpu_model": model, "share": {"mode": mode, "fraction": fraction}}


SHAPES = [
    # whole GPUs on one node, on every rung that sells them
    Shape("container-1gpu-H100", {"rung": "container", "gpu_model": H100, "gpus": 1}, check=one_node),
    Shape("container-2gpus-H100", {"rung": "container", "gpu_model": H100, "gpus": 2}, check=one_node),
    Shape("container-8gpus-H100", {"rung": "container", "gpu_model": H100, "gpus": 8}, check=one_node),
    Shape("container-1gpu-x3-H200", {"rung": "container", "gpu_model": H200, "gpus": 1}, count=3, check=one_node),
    Shape("container-2gpus-any-model", {"rung": "container", "gpu_models": [H200, H100], "gpus": 2}),
    Shape("job-1gpu-H100", {"rung": "job", "gpu_model": H100, "gpus": 1}),
    Shape("vm-1gpu-H100", {"rung": "vm", "gpu_model": H100, "gpus": 1}, check=one_node),
    Shape("vm-8gpus-H200", {"rung": "vm", "gpu_model": H200, "gpus": 8}, check=one_node),
    Shape("serverless-1gpu-H200", {"rung": "serverless", "gpu_model": H200, "gpus": 1}),
    # MIG slices: every profile, on container; one on serverless
    *mig_shapes(),
    Shape("serverless-mig-1g.18gb-x3-H200", {"rung": "serverless", "gpu_model": H200, "mig_profile": "1g.18gb"}, 3),
    # soft shares (serverless only), every mode; three of one mode share the tenant's GPU
    Shape("serverless-mps-0.3-x3", share("mps", "0.3"), count=3, check=one_shared_gpu),
    Shape("serverless-time_slicing-0.25-x3", share("time_slicing", "0.25"), count=3, check=one_shared_gpu),
    Shape("serverless-fractional-0.5-x2", share("fractional", "0.5"), count=2, check=one_shared_gpu),
    Shape("serverless-fractional-0.125-H100", share("fractional", "0.125", H100)),
    # gangs: all members or none, in one NVLink domain
    Shape(
        "job-gang-2x8-nvlink-H200",
        {"rung": "job", "gpu_model": H200, "gpus": 8, "gang": {"size": 2, "topology": "nvlink"}},
        check=one_nvlink_domain,
    ),
    Shape(
        "job-gang-4x4-nvlink-H200",
        {"rung": "job", "gpu_model": H200, "gpus": 4, "gang": {"size": 4, "topology": "nvlink"}},
        check=one_nvlink_domain,
    ),
    Shape(
        "job-gang-2x2-nvlink-x2-H100",
        {"rung": "job", "gpu_model": H100, "gpus": 2, "gang": {"size": 2, "topology": "nvlink"}},
        count=2,
        check=one_nvlink_domain,
    ),
    Shape("job-gang-3x2-no-topology-H200", {"rung": "job", "gpu_model": H200, "gpus": 2, "gang": {"size": 3}}),
    # whole hosts
    Shape("bare_metal-1node-H100", {"rung": "bare_metal", "gpu_model": H100, "nodes": 1}, check=whole_hosts),
    Shape("bare_metal-2nodes-H200", {"rung": "bare_metal", "gpu_model": H200, "nodes": 2}, check=spans_nodes(2)),
    Shape("bare_metal-1node-x2-H200", {"rung": "bare_metal", "gpu_model": H200, "nodes": 1}, 2, check=whole_hosts),
    # confidential VMs: the demo's CC host is in the EU-fenced hall, so the tenant goes sovereign EU first
    Shape(
        "confidential_vm-1gpu-x2-H200",
        {"rung": "confidential_vm", "gpu_model": H200, "gpus": 1},
        count=2,
        tenant=SOVEREIGN_EU,
        check=on_cc_hosts,
    ),
    Shape(
        "confidential_vm-8gpus-H200",
        {"rung": "confidential_vm", "gpu_model": H200, "gpus": 8},
        tenant=SOVEREIGN_EU,
        check=on_cc_hosts,
    ),
    Shape("sovereign-container-2gpus-H200", {"rung": "container", "gpu_model": H200, "gpus": 2}, tenant=SOVEREIGN_EU),
]


# --- the checks -------------------------------------------------------------------------------------------------


def device_key(d: dict[str, Any]) -> tuple[Any, ...]:
    return (d["node"], d["gpu_index"], d["mig_start"] if d["mig_start"] is not None else -1)


def expected_axes(body: dict[str, Any]) -> tuple[str, str]:
    if "mig_profile" in body:
        performance = "mig"
    elif "share" in body:
        performance = body["share"]["mode"]
    else:
        performance = "whole_gpu"
    return performance, RUNGS[Rung(body["rung"])].security.value


def expected_device_count(body: dict[str, Any]) -> int:
    if "nodes" in body:
        return body["nodes"] * 8  # the demo's nodes have 8 GPUs
    if "gpus" in body:
        return body["gpus"] * body.get("gang", {}).get("size", 1)
    return 1


def assert_host_taken(allocation: dict[str, Any]) -> None:
    """The answer's vCPUs and memory are the rung's bundle, and its nodes' hosts hold them (the demo states hosts)."""
    if allocation["rung"] == "bare_metal":
        assert (allocation["cpu"], allocation["memory_gib"]) == (None, None)
        return
    whole = allocation["performance_isolation"] == "whole_gpu"
    slices = 0 if whole else len(allocation["devices"])  # a slice or share each; whole GPUs: linear in the GPUs
    cpu, memory = bundled(Rung(allocation["rung"]), allocation["gpu_model"], len(allocation["devices"]) if whole else 0)
    cpu, memory = (cpu * slices, memory * slices) if slices else (cpu, memory)
    shown = (Decimal(allocation["cpu"]), Decimal(allocation["memory_gib"]))
    assert shown == (Decimal(cpu) / 1000, Decimal(memory) / 1024)
    nodes = {d["node"] for d in allocation["devices"]}
    taken = in_memory()["nodes"]
    assert sum(taken[n][2] for n in nodes) >= cpu


def assert_claims_match(allocation: dict[str, Any], tenant_id: int) -> None:
    """The database claims exactly the memory slices the answer shows (soft shares: the GPU, for the tenant)."""
    expected: set[tuple[str, int]] = set()
    for d in allocation["devices"]:
        if d["share"] is not None:
            soft = GpuClaim.objects.filter(gpu__uuid=d["gpu_uuid"], soft_tenant_id=tenant_id).count()
            assert soft == MEMORY_SLICES, f"no soft claim of {d['gpu_uuid']} for the tenant"
            continue
        if d["mig_profile"] is not None:
            kind = CATALOG[allocation["gpu_model"]].mig_profiles[d["mig_profile"]]
            assert d["mig_start"] in GEOMETRY[kind].starts, d
            run = range(d["mig_start"], d["mig_start"] + GEOMETRY[kind].memory)
        else:
            run = range(MEMORY_SLICES)
        expected |= {(d["gpu_uuid"], s) for s in run}
    claimed = set(GpuClaim.objects.filter(allocation_id=allocation["id"]).values_list("gpu__uuid", "slice"))
    assert claimed == expected


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.id)
def test_every_shape_places_runs_reads_back_and_stops(demo: Demo, shape: Shape) -> None:
    alice = demo.client("alice")
    if shape.tenant is not None:
        assert alice.patch("/api/v1/tenant", shape.tenant, format="json").status_code == 200
    tenant_id = alice.get("/api/v1/tenant").json()["id"]
    before = assert_fleet_consistent("after seed_demo")

    created = []
    for i in range(shape.count):
        response = alice.post(URL, {"name": f"{shape.id}-{i}", **shape.body}, format="json")
        assert response.status_code == 201, f"#{i}: {response.status_code} {response.content[:400]!r}"
        created.append(response.json())
    assert_fleet_consistent("after placing")

    performance, security = expected_axes(shape.body)
    for placed in created:
        assert placed["state"] in ("placed", "provisioning", "running"), placed
        assert (placed["performance_isolation"], placed["security_isolation"]) == (performance, security)
        assert len(placed["devices"]) == expected_device_count(shape.body), placed["devices"]
        if "mig_profile" in shape.body:
            assert {d["mig_profile"] for d in placed["devices"]} == {shape.body["mig_profile"]}
        if "share" in shape.body:
            assert {Decimal(d["share"]) for d in placed["devices"]} == {Decimal(shape.body["share"]["fraction"])}
        read = alice.get(f"{URL}/{placed['id']}")
        assert read.status_code == 200, read.content
        body = read.json()
        assert body["state"] == "running", body
        assert sorted(body["devices"], key=device_key) == sorted(placed["devices"], key=device_key)
        assert_claims_match(body, tenant_id)
        assert_host_taken(body)
    if shape.check is not None:
        shape.check(created)

    for placed in created:
        stopped = alice.delete(f"{URL}/{placed['id']}")
        assert stopped.status_code == 200, stopped.content
        assert stopped.json()["state"] == "stopped", stopped.json()
        assert not GpuClaim.objects.filter(allocation_id=placed["id"]).exists()
        assert not NodeHold.objects.filter(allocation_id=placed["id"]).exists()
        assert_fleet_consistent(f"after stopping {placed['name']}")
    app.tasks["provisioning.tasks.allocations_reconcile"].apply()  # as beat_inline does: due wipes (bare metal)
    listed = alice.get(URL)
    assert listed.status_code == 200
    assert {a["state"] for a in listed.json()["results"] if a["id"] in {p["id"] for p in created}} == {"stopped"}
    assert not Node.objects.exclude(state="ready").exists()
    assert assert_fleet_consistent("after stopping") == before, "stopping did not give everything back"
    assert audit_chain_verify().ok


def test_the_first_request_a_newcomer_makes_answers_201(demo: Demo) -> None:
    """docs/workloads.md's first allocation after make run, and the MIG slice of the original report."""
    alice = demo.client("alice")
    whole = alice.post(URL, {"name": "train", "rung": "container", "gpu_model": H100, "gpus": 2}, format="json")
    assert whole.status_code == 201, whole.content
    mig = alice.post(
        URL, {"name": "m", "rung": "container", "gpu_model": H100, "mig_profile": "1g.10gb"}, format="json"
    )
    assert mig.status_code == 201, mig.content
    assert alice.get(f"{URL}/{mig.json()['id']}").json()["state"] == "running"
    assert_fleet_consistent("after both")


def test_a_confidential_host_stays_with_its_tenant_while_any_of_its_vms_runs(demo: Demo) -> None:
    alice, charlie = demo.client("alice"), demo.client("charlie")
    for client in (alice, charlie):
        assert client.patch("/api/v1/tenant", SOVEREIGN_EU, format="json").status_code == 200
    cvm = {"rung": "confidential_vm", "gpu_model": H200, "gpus": 1}
    first, second = (alice.post(URL, {"name": name, **cvm}, format="json").json() for name in ("first", "second"))
    (host,) = _nodes(first["devices"]) | _nodes(second["devices"])

    assert alice.delete(f"{URL}/{first['id']}").json()["state"] == "stopped"
    alice.get(URL)  # the list finishes due wipes: there must be none, this is no bare-metal host
    assert Node.objects.get(hostname=host).state == "ready"
    assert NodeHold.objects.get(node__hostname=host).tenant.slug == "acme"
    assert_fleet_consistent("after stopping one of two VMs")
    refused = charlie.post(URL, {"name": "intruder", **cvm}, format="json")
    assert refused.status_code == 409, refused.json()

    assert alice.delete(f"{URL}/{second['id']}").json()["state"] == "stopped"
    assert not NodeHold.objects.filter(node__hostname=host).exists()
    welcome = charlie.post(URL, {"name": "next", **cvm}, format="json")
    assert welcome.status_code == 201, welcome.json()
    assert _nodes(welcome.json()["devices"]) == {host}
    assert_fleet_consistent("after the host changed hands")


def test_a_job_on_a_failed_node_restarts_elsewhere_and_runs_again(demo: Demo) -> None:
    alice, operator = demo.client("alice"), demo.client("operator")
    gang = {"rung": "job", "gpu_model": H200, "gpus": 8, "gang": {"size": 2, "topology": "nvlink"}}
    job = alice.post(URL, {"name": "train", **gang}, format="json").json()
    failed = Node.objects.get(hostname=job["devices"][0]["node"])
    assert operator.post(f"/api/v1/ops/nodes/{failed.pk}/fail", {"reason": "Xid 79"}, format="json").status_code == 200
    restarted = alice.get(f"{URL}/{job['id']}").json()
    assert restarted["state"] == "running", restarted
    assert failed.hostname not in _nodes(restarted["devices"])
    one_nvlink_domain([restarted])
    assert_claims_match(restarted, alice.get("/api/v1/tenant").json()["id"])
    assert_fleet_consistent("after the restart")


def test_the_demo_endpoint_scales_to_zero_and_its_next_request_wakes_it(demo: Demo, settings: Any) -> None:
    """``make run``'s serverless endpoint: idle after the idle window (beat_inline's reconcile), holding nothing and
    shown as idle; its next call answers after a cold start; it stops like any other allocation."""
    alice = demo.client("alice")
    endpoint = Allocation.objects.get(name="inference", rung=Rung.SERVERLESS)
    before = assert_fleet_consistent("after seed_demo")
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 0
    app.tasks["provisioning.tasks.allocations_reconcile"].apply()  # as beat_inline does
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 300
    read = alice.get(f"{URL}/{endpoint.pk}").json()
    assert (read["state"], read["replicas"], read["devices"]) == ("idle", 0, [])
    assert read["access"]["endpoint"] == f"{settings.LADDER_PUBLIC_URL}/endpoints/{endpoint.pk}/"  # it keeps its URL
    assert not GpuClaim.objects.filter(allocation=endpoint).exists()
    idle = assert_fleet_consistent("after the endpoint went idle")
    assert idle != before, "an idle endpoint still holds its slice"

    answer = alice.post(f"/endpoints/{endpoint.pk}/v1/chat/completions", {"prompt": "hi"}, format="json")
    assert answer.status_code == 200, answer.content
    endpoint.refresh_from_db()
    assert (endpoint.state, endpoint.replicas) == ("running", 1)
    assert endpoint.cold_start_ms is not None
    assert alice.get(f"{URL}/{endpoint.pk}").json()["cold_start_ms"] == endpoint.cold_start_ms
    assert assert_fleet_consistent("after the wake") == before  # the same shape again (here, the same slice)

    stopped = alice.delete(f"{URL}/{endpoint.pk}")
    assert stopped.json()["state"] == "stopped", stopped.json()
    assert not GpuClaim.objects.filter(allocation=endpoint).exists()
    assert audit_chain_verify().ok


def test_the_demos_usage_is_priced_closed_and_pushed_with_nothing_failed(
    stripe_server: Any, demo: Demo, time_machine: TimeMachineFixture
) -> None:
    """``make run``'s billing path after ``seed_demo``: every workload the demo started is metered at a price (its
    serverless MIG endpoint included); three hours on (the clock moved, nobody waits), the windows close into rollups
    and the push to Stripe (the local fake) leaves none failed and none stale."""
    call_command("migrate", "--noinput", verbosity=0)  # make run migrates on every start: a second run changes nothing
    started = Allocation.objects.order_by("-running_since").values_list("running_since", flat=True).first()
    assert started is not None
    assert not UsageInterval.objects.filter(price=None).exists(), "a demo workload runs without a price"
    metered = UsageInterval.objects.filter(allocation__isnull=False).values_list("allocation__name", flat=True)
    assert set(metered) == {a[1] for a in DEMO_ALLOCATIONS}
    # acme's datasets volume is metered by the GB-hour beside them, shared by its notebook and its training job.
    datasets = Volume.objects.get(tenant__slug="acme", name="datasets")
    assert UsageInterval.objects.get(volume=datasets, end_ms=None).units_milli == 1000 * datasets.size_gb
    assert sorted(datasets.attachments.values_list("allocation__name", flat=True)) == ["notebook", "pretrain"]

    later = max(timezone.now(), started) + timedelta(hours=3)
    time_machine.move_to(later)
    now = later.isoformat()
    call_command("stripe_sync_catalog", stdout=StringIO())
    closed = StringIO()
    call_command("billing_close_windows", "--now", now, stdout=closed, stderr=StringIO())
    assert "rolled up" in closed.getvalue()
    pushed = StringIO()
    # The moved clock ticks on: rollups made a moment after ``later`` are due now. Exits 1 on a failed or stale one.
    call_command("billing_push", stdout=pushed, stderr=StringIO())

    rollups = UsageRollup.objects.all()
    assert rollups.exists()
    assert not rollups.filter(price=None).exists()
    assert not rollups.filter(push_state__in=(PushState.FAILED, PushState.STALE)).exists(), pushed.getvalue()
    assert set(rollups.values_list("push_state", flat=True)) <= {PushState.SENT, PushState.NOTHING}, pushed.getvalue()
    inference = rollups.filter(sku__code="serverless/H100-SXM-80GB/mig-3g.40gb/eu-west")
    assert inference.filter(push_state=PushState.SENT).exists()
