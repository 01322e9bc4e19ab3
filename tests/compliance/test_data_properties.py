"""Property tests of the data lifecycle through the real services and database: random assets, retention rules,
holds, releases, deletes, erasure requests and sweeps at random moments.

- A held asset is never shredded, nor counting down to it: every asset an active hold covers is live, or was
  shredded before the hold was placed.
- Every expired asset no hold covers is shredded once a sweep and the waiting period have passed.
- Erasure results always name the holds that withheld data, and withhold exactly what active holds cover.
- Residency: no asset is ever registered in a region its tenant's policy refuses.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compliance.domain import retention
from compliance.models import AssetState, DataAsset, ErasureOutcome, HoldState, LegalHold
from compliance.services.assets import AssetScope, data_asset_delete
from compliance.services.erasure import erasure_request_create
from compliance.services.holds import legal_hold_create, legal_hold_release
from compliance.services.sweep import retention_policy_set, retention_sweep
from core.errors import ServiceError
from tests.support import SYSTEM
from tests.support.data import T0, asset, regions

CATEGORIES = ["dataset", "job_log", "checkpoint", "invoice"]
WAIT = timedelta(days=7)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("asset"), st.sampled_from(CATEGORIES)),
        st.tuples(st.just("policy"), st.sampled_from(CATEGORIES[:3]), st.integers(min_value=1, max_value=60)),
        st.tuples(
            st.just("hold"),
            st.sets(st.sampled_from(CATEGORIES), max_size=2),
            st.one_of(st.none(), st.integers(min_value=0, max_value=120)),
            st.one_of(st.none(), st.integers(min_value=0, max_value=120)),
        ),
        st.tuples(st.just("release"), st.integers(min_value=0, max_value=5)),
        st.tuples(st.just("delete"), st.integers(min_value=0, max_value=15)),
        st.tuples(st.just("erase"), st.sets(st.sampled_from(CATEGORIES), min_size=1, max_size=2)),
        st.tuples(st.just("sweep"), st.booleans()),
    ),
    min_size=1,
    max_size=18,
)


class Rollback(Exception):
    pass


def attempt(action: Any) -> ServiceError | None:
    """The refusal ``action`` met, or None when it went through."""
    try:
        action()
    except ServiceError as refused:
        return refused
    return None


def covered(hold: LegalHold, a: DataAsset) -> bool:
    return hold.scope().covers(a.tenant_id, a.category, a.created_at)


def check_holds_win(tenant: Any) -> None:
    for hold in LegalHold.objects.filter(tenant=tenant, state=HoldState.ACTIVE):
        for a in DataAsset.objects.filter(tenant=tenant):
            if not covered(hold, a):
                continue
            assert a.state != AssetState.SHREDDING, f"asset {a.pk} counts down to shredding under hold {hold.pk}"
            if a.state == AssetState.SHREDDED:
                assert a.shredded_at is not None
                assert a.shredded_at <= hold.created_at, f"{a.pk} shredded under a hold"


def keep_days(policies: dict[str, int], category: str) -> int:
    rule = policies.get(category, retention.DEFAULT_DAYS[category])
    return max(rule, retention.LEGAL_MINIMUM_DAYS.get(category, 0))


@pytest.fixture
def world(acme: Any, globex: Any) -> tuple[Any, Any]:
    regions()
    return acme, globex


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(st.tuples(st.integers(min_value=0, max_value=40), ops), min_size=1, max_size=3))
def test_holds_always_win_and_expired_unheld_data_is_always_shredded(world: Any, script: Any) -> None:
    acme, globex = world
    try:
        with transaction.atomic():
            run(acme, globex, script)
            raise Rollback
    except Rollback:
        pass


def run(acme: Any, globex: Any, script: Any) -> None:
    now = T0
    policies: dict[str, int] = {}
    for advance, actions in script:
        now += timedelta(days=advance)
        for action in actions:
            kind = action[0]
            if kind == "asset":
                asset(acme, category=action[1], at=now)
                asset(globex, category=action[1], at=now)  # another tenant's data: holds never reach it
            elif kind == "policy":
                retention_policy_set(
                    tenant=acme, category=action[1], days=action[2], zero_retention=False, actor=SYSTEM
                )
                policies[action[1]] = action[2]
            elif kind == "hold":
                start = T0 + timedelta(days=action[2]) if action[2] is not None else None
                end = T0 + timedelta(days=action[3]) if action[3] is not None else None
                if start and end and start > end:
                    start, end = end, start
                scope = AssetScope(categories=sorted(action[1]), created_from=start, created_to=end)
                legal_hold_create(
                    tenant=acme, matter="m", reason="r", scope=scope, lock_until=None, actor=SYSTEM, now=now
                )
            elif kind == "release":
                active = list(LegalHold.objects.filter(tenant=acme, state=HoldState.ACTIVE).order_by("pk"))
                if active:
                    hold = active[action[1] % len(active)]
                    legal_hold_release(hold=hold, reason="done", actor=SYSTEM, now=now)
            elif kind == "delete":
                live = list(DataAsset.objects.filter(tenant=acme).order_by("pk"))
                if live:
                    target = live[action[1] % len(live)]
                    refused = attempt(lambda t=target, at=now: data_asset_delete(asset=t, actor=SYSTEM, now=at))
                    if refused is not None:
                        assert refused.code == "legal_hold"
                        holds = LegalHold.objects.filter(pk__in=refused.extra["holds"], state=HoldState.ACTIVE)
                        assert holds
                        assert all(covered(h, target) for h in holds)
            elif kind == "erase":
                check_erasure(acme, sorted(action[1]), now)
            elif kind == "sweep":
                now = check_sweep(acme, policies, now, twice=action[1])
            check_holds_win(acme)
    check_sweep(acme, policies, now, twice=True)
    check_holds_win(acme)


def check_erasure(tenant: Any, categories: list[str], now: Any) -> None:
    active = list(LegalHold.objects.filter(tenant=tenant, state=HoldState.ACTIVE))
    request = erasure_request_create(tenant=tenant, actor=SYSTEM, categories=categories, now=now)
    for item in request.items.select_related("asset", "hold"):
        holders = [h for h in active if covered(h, item.asset)]
        if item.outcome == ErasureOutcome.WITHHELD:
            assert item.hold in holders, "a withheld asset names a hold that covers it"
        elif item.outcome == ErasureOutcome.DELETED:
            assert not holders or item.asset.state == AssetState.SHREDDED
    assert request.state == ("suspended" if request.items.filter(outcome=ErasureOutcome.WITHHELD) else "completed")


def check_sweep(tenant: Any, policies: dict[str, int], now: Any, *, twice: bool) -> Any:
    """Sweep at ``now`` (and, ``twice``, again when the waiting period is over); returns the clock after."""
    retention_sweep(now=now)
    if not twice:
        return now
    retention_sweep(now=now + WAIT)
    active = list(LegalHold.objects.filter(tenant=tenant, state=HoldState.ACTIVE))
    for a in DataAsset.objects.filter(tenant=tenant):
        expired = a.created_at + timedelta(days=keep_days(policies, a.category)) <= now
        if expired and not any(covered(h, a) for h in active):
            assert a.state == AssetState.SHREDDED, f"expired unheld asset {a.pk} ({a.category}) is {a.state}"
    return now + WAIT


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    regions_allowed=st.one_of(st.none(), st.sets(st.sampled_from(["eu-west", "us-east"]))),
    jurisdictions=st.one_of(st.none(), st.sets(st.sampled_from(["EU", "US"]))),
    sovereign=st.booleans(),
    wanted=st.sampled_from(["eu-west", "us-east"]),
)
def test_residency_is_never_violated_by_asset_registration(
    world: Any, regions_allowed: Any, jurisdictions: Any, sovereign: bool, wanted: str
) -> None:
    acme, _ = world
    if sovereign and not jurisdictions:
        jurisdictions = {"EU"}
    acme.residency_regions = sorted(regions_allowed) if regions_allowed is not None else None
    acme.residency_jurisdictions = sorted(jurisdictions) if jurisdictions is not None else None
    acme.sovereign = sovereign and len(jurisdictions or ()) == 1
    acme.save()
    jurisdiction = {"eu-west": "EU", "us-east": "US"}[wanted]
    allowed = (
        (regions_allowed is None or wanted in regions_allowed)
        and (jurisdictions is None or jurisdiction in jurisdictions)
        and (not acme.sovereign or jurisdiction == "EU")  # only eu-west has a hall fenced (for EU)
    )
    try:
        with transaction.atomic():
            refused = attempt(lambda: asset(acme, region=wanted))
            if refused is not None:
                assert refused.code == "residency"
                assert not allowed
            else:
                assert allowed
                assert DataAsset.objects.get(tenant=acme).region.code == wanted
            raise Rollback
    except Rollback:
        pass
