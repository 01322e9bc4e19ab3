"""The tiers' table (tests/support/tiers.py) stays true: every module it lists exists, and every test lands in
exactly one tier."""

from __future__ import annotations

from tests.support import ROOT
from tests.support.tiers import BENCH, EXCLUSIVE, ONCE, SYSTEM, runs_once, tier_of


def test_every_listed_path_exists() -> None:
    missing = [entry for entry in (*SYSTEM, *BENCH) if not (ROOT / "tests" / entry).exists()]
    missing += [test for test in (*EXCLUSIVE, *ONCE) if not (ROOT / "tests" / test.split("::")[0]).exists()]
    assert missing == []


def test_each_test_has_one_tier_by_where_it_lives() -> None:
    assert tier_of("tests/browser/test_portal.py::test_it_signs_in") == "system"
    assert tier_of("tests/billing/test_worker.py::test_x[param]") == "system"
    assert tier_of("tests/bench/test_load.py::test_x") == "bench"
    assert (
        tier_of("tests/bench/test_faults.py::test_the_fault_run_passes_every_check_with_short_windows") == "exclusive"
    )
    assert tier_of("tests/bench/test_faults.py::test_readiness_must_drop_for_what_it_checks_and_hold_for_the_rest") == (
        "bench"
    )
    assert tier_of("tests/api/test_allocations.py::test_x") == "fast"
    assert tier_of("tests/api/test_http_something_else.py::test_x") == "fast"  # a module, not a prefix


def test_what_runs_once_is_named_by_module_or_by_test() -> None:
    assert runs_once("tests/browser/test_accessibility.py::test_anything[x]")
    assert runs_once("tests/billing/test_focus_validator.py::test_the_exports_of_a_generated_month_validate")
    assert not runs_once("tests/billing/test_focus_validator.py::test_the_exports_of_the_demo_data_validate")
    assert not runs_once("tests/browser/test_portal.py::test_it_signs_in")
