"""The pure retention rules (``compliance.domain.retention``): legal minimums, the longest rule, hold scopes,
decisions."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compliance.domain import retention
from compliance.domain.retention import Decision, Holds, HoldScope, Rule, RuleInvalid

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_settings_override_reads_category_days_and_refuses_nonsense():
    assert retention.parse_days(" dataset=30, job_log=7 ,") == {"dataset": 30, "job_log": 7}
    for bad in ("datasets=30", "dataset", "dataset=-1", "dataset=0", "dataset=x", f"dataset={retention.MAX_DAYS + 1}"):
        with pytest.raises(ValueError, match="retention"):
            retention.parse_days(bad)


def test_finance_records_keep_their_legal_minimum_whatever_the_rule():
    minimum = retention.LEGAL_MINIMUM_DAYS["invoice"]
    with pytest.raises(RuleInvalid, match="legal minimum"):
        retention.rule_check(retention.Category.INVOICE, Rule(days=30), legal_minimum_days=minimum)
    with pytest.raises(RuleInvalid, match="zero retention"):
        retention.rule_check(
            retention.Category.INVOICE, Rule(days=None, zero_retention=True), legal_minimum_days=minimum
        )
    assert retention.effective_days(Rule(days=30), legal_minimum_days=minimum) == minimum
    assert retention.effective_days(Rule(days=minimum + 5), legal_minimum_days=minimum) == minimum + 5
    assert retention.effective_days(Rule(days=None, zero_retention=True), legal_minimum_days=0) is None


def test_a_rule_is_days_or_zero_retention():
    with pytest.raises(ValueError, match="not both"):
        Rule(days=5, zero_retention=True)
    with pytest.raises(RuleInvalid, match="1 to"):
        retention.rule_check(retention.Category.DATASET, Rule(days=retention.MAX_DAYS + 1), legal_minimum_days=0)


def test_a_hold_covers_its_tenant_categories_and_dates_only():
    hold = HoldScope(
        id=1, tenant_id=7, categories=frozenset({"dataset"}), created_from=T0, created_to=T0 + timedelta(days=1)
    )
    assert hold.covers(7, "dataset", T0)
    assert hold.covers(7, "dataset", T0 + timedelta(days=1))  # both ends included
    assert not hold.covers(8, "dataset", T0)
    assert not hold.covers(7, "job_log", T0)
    assert not hold.covers(7, "dataset", T0 - timedelta(seconds=1))
    assert HoldScope(id=2, tenant_id=7).covers(7, "invoice", T0)  # no categories, no dates: everything


facts = st.builds(
    retention.AssetFacts,
    id=st.integers(1, 100),
    tenant_id=st.integers(1, 3),
    category=st.sampled_from(list(retention.Category)),
    created_at=st.integers(0, 400).map(lambda d: T0 + timedelta(days=d)),
    state=st.sampled_from(["live", "shredding", "shredded"]),
    shred_after=st.one_of(st.none(), st.integers(0, 420).map(lambda d: T0 + timedelta(days=d))),
)
scopes = st.lists(
    st.builds(
        HoldScope,
        id=st.integers(1, 50),
        tenant_id=st.integers(1, 3),
        categories=st.frozensets(st.sampled_from(list(retention.Category)), max_size=3),
        created_from=st.one_of(st.none(), st.integers(0, 400).map(lambda d: T0 + timedelta(days=d))),
        created_to=st.one_of(st.none(), st.integers(0, 400).map(lambda d: T0 + timedelta(days=d))),
    ),
    max_size=5,
)


@given(asset=facts, holds=scopes, keep=st.one_of(st.none(), st.integers(0, 500)), day=st.integers(0, 900))
def test_a_decision_never_destroys_what_a_hold_covers(asset, holds, keep, day):
    now = T0 + timedelta(days=day)
    decision, hold = retention.decide(asset, keep_days=keep, holds=Holds(holds), now=now)
    covering = [
        h.id for h in sorted(holds, key=lambda h: h.id) if h.covers(asset.tenant_id, asset.category, asset.created_at)
    ]
    if decision in (Decision.SCHEDULE, Decision.SHRED):
        assert not covering
    if decision in (Decision.HELD, Decision.SUSPEND):
        assert hold == covering[0]
    expired = keep is None or asset.created_at + timedelta(days=keep) <= now
    if asset.state == "live" and expired and not covering:
        assert decision == Decision.SCHEDULE
    if asset.state == "shredding" and asset.shred_after is not None and asset.shred_after <= now and not covering:
        assert decision == Decision.SHRED
