"""The suite's tiers, written down once: every test is in exactly one, by the module it lives in.

- ``fast`` (no marker): unit and database tests. They run in parallel on every core (``make test-fast``), and again
  with the wall clock moved (``--clock``), since they are where a date can matter.
- ``system``: what starts something real beside the test: a browser, a Celery worker or beat, gunicorn, a live
  server over a socket, a subprocess of Django, an external validator (the FOCUS validator, ``kubectl kustomize``),
  Prometheus.
- ``bench``: the benchmarks' smoke tests (``tests/bench``), each running a benchmark in a subprocess.
- ``exclusive``: a test that stops and starts the machine's own services (PostgreSQL, Redis); ``make test`` runs
  it alone, after the rest, since every other test would lose its database under it.

Beside its tier, a test may be marked ``once``: what it checks cannot differ between the database passes nor with the
clock moved (a file format an external validator judges, the pages' accessibility, packaging, the SDK's drift, a
deploy check, the production beat's lock in Redis), so ``make test``'s second pass (the embedded default, clock
moved) leaves it out. The embedded default keeps every test of its own behaviour.

Select with ``-m``: ``-m "not system and not bench and not exclusive"`` is the fast tier. The markers are set here
at collection; a module states its tier only by where it is listed below (tests/test_tiers.py keeps this list
true: every listed module exists).
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

# Paths under tests/: a directory (ending in "/") or a module.
SYSTEM = (
    "browser/",
    "cli/live/",
    "cli/test_sdk_drift.py",
    "deploy/",
    "api/test_gpu_metrics_prometheus.py",
    "api/test_http.py",
    "api/test_scale_to_zero_http.py",
    "billing/test_focus_validator.py",
    "billing/test_worker.py",
    "config/test_beat_lock.py",
    "config/test_celery_worker.py",
    "config/test_gunicorn_metrics.py",
    "config/test_settings.py",
    "core/test_prometheus.py",
    "lifecycle/test_closure_worker.py",
    "lifecycle/test_idle_stop_prometheus.py",
    "portal/consoles/test_operator_gpu_activity.py",
    "provisioning/drivers/kubernetes/test_gateway_tokens.py",
    "provisioning/test_gpu_faults_prometheus.py",
    "test_deploy_checks.py",
)
BENCH = ("bench/",)
# Paths and test ids run in the first pass only (``once`` above); each is as slow as it is database-blind.
ONCE = (
    "browser/test_accessibility.py",
    "billing/test_focus_validator.py::test_the_exports_of_a_generated_month_validate",
    "cli/live/test_install.py",
    "cli/test_sdk_drift.py",
    "config/test_beat_lock.py",
    "test_deploy_checks.py",
)
# Test ids (path::name) that restart the machine's services.
EXCLUSIVE = ("bench/test_faults.py::test_the_fault_run_passes_every_check_with_short_windows",)


def _matches(path: str, listed: tuple[str, ...]) -> bool:
    return any(path.startswith(entry) if entry.endswith("/") else path == entry for entry in listed)


def runs_once(nodeid: str) -> bool:
    """Whether a test (an id relative to the repository's root) is left out of the second pass (``ONCE``)."""
    path, _, name = nodeid.removeprefix("tests/").partition("::")
    return _matches(path, tuple(e for e in ONCE if "::" not in e)) or f"{path}::{name.split('[')[0]}" in ONCE


def tier_of(nodeid: str) -> str:
    """``system``, ``bench``, ``exclusive`` or ``fast`` for a test id relative to the repository's root."""
    relative = nodeid.removeprefix("tests/")
    path, _, name = relative.partition("::")
    if f"{path}::{name.split('[')[0]}" in EXCLUSIVE:
        return "exclusive"
    if _matches(path, SYSTEM):
        return "system"
    if _matches(path, BENCH):
        return "bench"
    return "fast"


def pytest_configure(config: pytest.Config) -> None:
    for name, what in (
        ("system", "starts a browser, a worker, a server or a subprocess"),
        ("bench", "a benchmark's smoke test"),
        ("exclusive", "restarts the machine's services; runs alone"),
        ("once", "cannot differ between the passes: the first pass only"),
    ):
        config.addinivalue_line("markers", f"{name}: {what} (tests/support/tiers.py)")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by the markers set here
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier, and start the long tiers first, so that on several workers the short tests
    fill in around them instead of one worker finishing a long test alone at the end."""
    rank = {"exclusive": 0, "bench": 1, "system": 2, "fast": 3}
    tiers = {}
    for item in items:
        tier = tier_of(item.nodeid)
        tiers[item.nodeid] = tier
        if tier != "fast":
            item.add_marker(getattr(pytest.mark, tier))
        if runs_once(item.nodeid):
            item.add_marker(pytest.mark.once)
    items.sort(key=lambda item: rank[tiers[item.nodeid]])
