"""Shared fixtures: the standard actors, authenticated API clients, per-test process state and storage, a real
browser."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_save
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer
from rest_framework.test import APIClient

from lifecycle.services.customers import tenant_signup
from provisioning.drivers.kubernetes.clusters import cluster_register
from provisioning.models import Hall, Node, Region
from tenancy.domain.roles import StaffRole, TenantRole
from tenancy.models import ApiKeyScope, Tenant
from tenancy.services import api_key_create, member_invite, staff_user_create
from tests.fakes.kubernetes import K8sServer
from tests.support import K8S_TOKEN, SYSTEM, require_postgres
from tests.support.billing import load_fleet, price_pool, price_storage
from tests.support.browser import chromium, log_in, open_page, require_chromium
from tests.support.dcgm import Replay
from tests.support.otp import pass_second_factor
from tests.support.prometheus import Prometheus, prometheus_server, prometheus_stop

# Property tests judge correctness, not speed: on a loaded two-core machine (CI runs beside other work) input
# generation can be slow, and that is not a failure. Timings are measured in bench/.
hypothesis_settings.register_profile("ladder", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("ladder")


# --clock / LADDER_TEST_CLOCK: the wall clock moved for every test; the tiers (fast, system, bench, exclusive).
pytest_plugins = ["tests.support.clock", "tests.support.tiers"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "own_price_book: the test keeps its own price book; its fleet is not priced by default (_priced_fleet)",
    )


# --- PostgreSQL's append-only trigger vs. the flush after transactional tests --------------------------------
# pytest-django empties the database with TRUNCATE after each transactional test, which the audit trigger
# rightly refuses. The trigger is switched off just for that flush and switched back on before the next test.

_AUDIT_TRIGGERS = ("audit_event_no_update_delete", "audit_event_no_truncate")


def _set_audit_triggers(enabled: bool) -> None:
    # Not cached: switched on inside a test's transaction, the change is rolled back with it, and that is fine,
    # since every test switches them on again before it starts.
    if connection.vendor != "postgresql":
        return
    verb = "ENABLE" if enabled else "DISABLE"
    with connection.cursor() as cursor:
        for name in _AUDIT_TRIGGERS:
            cursor.execute(f"ALTER TABLE compliance_auditevent {verb} TRIGGER {name}")


@pytest.fixture(autouse=True)
def _audit_triggers(request: pytest.FixtureRequest, django_db_blocker: Any) -> Iterator[None]:
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    transactional = bool(marker and marker.kwargs.get("transaction")) or bool(
        {"transactional_db", "live_server"} & names
    )
    if not (marker or transactional or "db" in names):
        yield
        return
    request.getfixturevalue("django_db_setup")
    with django_db_blocker.unblock():
        _set_audit_triggers(True)
    if transactional:
        # Set the database up inside this fixture so that this teardown runs before pytest-django's flush.
        request.getfixturevalue("transactional_db")
    yield
    if transactional:
        with django_db_blocker.unblock():
            _set_audit_triggers(False)


@pytest.fixture(autouse=True)
def _postgres_marker(request: pytest.FixtureRequest) -> None:
    """A test marked ``postgres`` needs PostgreSQL: it skips without it, and fails under CI=true. The pass of
    ``make test`` on the embedded default (SQLite) leaves these out with ``-m "not postgres"``."""
    if request.node.get_closest_marker("postgres"):
        require_postgres()


@pytest.fixture(autouse=True)
def _fresh_process_state() -> Iterator[None]:
    """Each test's database starts over, so the process's in-memory fleet, its cache and its short memories of it
    must too (and a pause of Stripe's invoice preview after a failure)."""
    from django.core.cache import cache

    from billing.services import stripe_sync
    from core.cache import local_memos_clear
    from core.ratelimit import batches_clear
    from provisioning.fleet_cache import FLEET

    FLEET.invalidate()
    FLEET.seq = 0
    cache.clear()
    local_memos_clear()
    batches_clear()
    stripe_sync._preview_paused_until = 0.0
    yield
    FLEET.invalidate()


@pytest.fixture(autouse=True)
def _priced_fleet(request: pytest.FixtureRequest) -> Iterator[None]:
    """Nothing is placed without a price: every pool (GPU model x region) a test's fleet offers is priced as its
    first node is saved, however the fleet is loaded (``tests.support.billing.price_pool``), and every storage kind
    of a region as the region is made (``price_storage``). Tests marked ``own_price_book`` price what they place
    themselves."""
    if request.node.get_closest_marker("own_price_book"):
        yield
        return
    seen: set[tuple[int, int]] = set()

    def price_new_pool(sender: type[Node], instance: Node, raw: bool = False, **kwargs: Any) -> None:
        pool = (instance.gpu_model_id, instance.hall.region_id)
        if raw or pool in seen:
            return
        seen.add(pool)
        price_pool(instance.gpu_model, instance.hall.region)

    def price_new_region(sender: type[Region], instance: Region, raw: bool = False, **kwargs: Any) -> None:
        if not raw and kwargs.get("created"):
            price_storage(instance)

    post_save.connect(price_new_pool, sender=Node, weak=False, dispatch_uid="tests-priced-fleet")
    post_save.connect(price_new_region, sender=Region, weak=False, dispatch_uid="tests-priced-storage")
    try:
        yield
    finally:
        post_save.disconnect(sender=Node, dispatch_uid="tests-priced-fleet")
        post_save.disconnect(sender=Region, dispatch_uid="tests-priced-storage")


@pytest.fixture(autouse=True)
def _asset_storage(settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Data-asset content and simulated volumes of each test go to directories of its own, never the checkout's
    var/."""
    settings.LADDER_STORAGE_URL = tmp_path_factory.mktemp("storage").as_uri() + "/{region}"
    settings.LADDER_SIM_VOLUME_DIR = str(tmp_path_factory.mktemp("volumes"))


# --- the standard actors ---------------------------------------------------------------------------------------


@pytest.fixture
def acme(db: None) -> Tenant:
    return tenant_signup(
        slug="acme", name="Acme Robotics", username="alice", email="alice@acme.test", password="pw", actor=SYSTEM
    )


@pytest.fixture
def globex(db: None) -> Tenant:
    return tenant_signup(
        slug="globex", name="Globex", username="charlie", email="charlie@globex.test", password="pw", actor=SYSTEM
    )


@pytest.fixture
def alice(acme: Tenant) -> Any:
    return acme.memberships.get(user__username="alice").user


@pytest.fixture
def bob(acme: Tenant) -> Any:
    return member_invite(
        tenant=acme, actor_role=TenantRole.OWNER, username="bob", email="bob@acme.test", role="member", actor=SYSTEM
    ).user


@pytest.fixture
def charlie(globex: Tenant) -> Any:
    return globex.memberships.get(user__username="charlie").user


def _staff(username: str, role: StaffRole) -> Any:
    return staff_user_create(username=username, role=role, password="pw", actor=SYSTEM)


@pytest.fixture
def finance(db: None) -> Any:
    return _staff("finance", StaffRole.FINANCE)


@pytest.fixture
def compliance(db: None) -> Any:
    return _staff("compliance", StaffRole.COMPLIANCE)


@pytest.fixture
def operator(db: None) -> Any:
    return _staff("operator", StaffRole.OPERATOR)


# --- API clients -----------------------------------------------------------------------------------------------


@pytest.fixture
def api() -> Callable[..., APIClient]:
    """``api(user)`` is a client carrying a fresh API key of that user; ``api()`` is anonymous."""

    def make(user: Any = None, scopes: tuple[str, ...] = (ApiKeyScope.READ, ApiKeyScope.WRITE)) -> APIClient:
        client = APIClient()
        if user is not None:
            issued = api_key_create(user=user, name="test", scopes=list(scopes), expires_at=None, actor=SYSTEM)
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.token}")
        return client

    return make


@pytest.fixture
def admin_client(admin_user: Any) -> Client:
    """pytest-django's superuser client, past the second factor the admin asks of every staff user."""
    client = Client()
    client.force_login(admin_user)
    return pass_second_factor(client, admin_user)


# --- a real browser ----------------------------------------------------------------------------------------------


@pytest.fixture
def browser_page(live_server: LiveServer) -> Iterator[Page]:
    """A Playwright page in headless Chromium (Debian's, or ``$LADDER_CHROMIUM``) whose relative URLs go to the live
    server: ``browser_page.goto("/api/docs/")``. The test's database is transactional, since the server answers
    from another thread. An uncaught JavaScript error on the page fails the test at teardown. Without Chromium the
    test skips (fails under CI=true). See tests/support/browser.py."""
    with chromium(require_chromium()) as browser, open_page(browser, live_server.url) as page:
        yield page


@pytest.fixture
def browser_login(browser_page: Page, live_server: LiveServer) -> Callable[[Any], None]:
    """``browser_login(user)`` logs ``user`` in on ``browser_page`` by session cookie, without the login form."""

    def login(user: Any) -> None:
        log_in(browser_page, user, url=live_server.url)

    return login


# --- Stripe ----------------------------------------------------------------------------------------------------


@pytest.fixture
def stripe_server(settings: Any) -> Iterator[Any]:
    """A local Stripe (``tests.fakes.stripe``) with the settings pointing at it; stopped after the test."""
    from tests.fakes.stripe import StripeServer

    server = StripeServer(api_key="sk_test_ladder").start()
    settings.STRIPE_API_KEY = "sk_test_ladder"
    settings.STRIPE_API_BASE = server.url
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test"
    settings.STRIPE_METER_EVENTS_PER_SECOND = 1000
    try:
        yield server
    finally:
        server.stop()


# --- Kubernetes -----------------------------------------------------------------------------------------------


@pytest.fixture
def cluster_api(settings: Any) -> Iterator[K8sServer]:
    """The fake Kubernetes API server (tests/fakes/kubernetes.py), and the Kubernetes provisioner pointed at it."""
    server = K8sServer(token=K8S_TOKEN).start()
    settings.LADDER_PROVISIONER = "kubernetes"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def k8s_fleet(db: None, cluster_api: K8sServer) -> K8sServer:
    """The small fleet with LADDER_PROVISIONER=kubernetes: every hall's cluster is the fake API server, which
    knows every host, as a Node and as a Metal3 BareMetalHost (enrolled by the operator, in ``metal3``)."""
    load_fleet()
    for hall in Hall.objects.all():
        cluster_register(
            name=f"k8s-{hall.code}",
            hall=hall,
            api_server=cluster_api.url,
            credentials={"token": K8S_TOKEN},
            actor=SYSTEM,
        )
    for node in Node.objects.all():  # the cluster knows every host of the fleet
        cluster_api.put_object(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node.hostname, "labels": {"kubernetes.io/hostname": node.hostname}},
                "spec": {"taints": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            }
        )
    cluster_api.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "metal3"}})
    for node in Node.objects.all():
        cluster_api.put_object(
            {
                "apiVersion": "metal3.io/v1alpha1",
                "kind": "BareMetalHost",
                "metadata": {"name": node.hostname, "namespace": "metal3"},
                "spec": {"online": True, "bootMACAddress": "52:54:00:00:00:01"},
            }
        )
    return cluster_api


@pytest.fixture
def prometheus(settings: Any) -> Iterator[Prometheus]:
    """This process's real Prometheus (tests/support/prometheus.py), which Ladder reads at LADDER_PROMETHEUS_URL;
    the targets the test had it scrape are let go after it, and every series it holds forgotten."""
    server = prometheus_server()
    settings.LADDER_PROMETHEUS_URL = server.url
    yield server
    server.unscrape_all()
    server.forget_all()


def pytest_sessionfinish(session: pytest.Session) -> None:
    prometheus_stop()


@pytest.fixture
def prometheus_clock(prometheus: Prometheus) -> Iterator[Prometheus]:
    """``prometheus``, with the suite's clock moved to Prometheus's for the test (tests/support/prometheus.py)."""
    with prometheus.clock():
        yield prometheus


@pytest.fixture
def replays() -> Iterator[list[Replay]]:
    """The simulated exporters a test replays into Prometheus (tests/support/dcgm.py), stopped after it."""
    made: list[Replay] = []
    yield made
    for replay in made:
        replay.close()
