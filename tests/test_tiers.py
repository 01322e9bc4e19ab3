"""The tiers' table (tests/support/tiers.py) stays true: every module it lists exists, and every test lands in
exactly one tier."""

from __future__ import annotations

from tests.support import ROOT
from tests.support.tiers import BENCH, EXCLUSIVE, SYSTEM, tier_of


def test_every_listed_path_exists() -> None:
    missing = [entry for entry in (*SYSTEM, *BENCH) if not (ROOT / "tests" / entry).exists()]
    missing += [test for test in EXCLUSIVE if not (ROOT / "tests" / test.split("::")[0]).is_file()]
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
