"""The rules that decide when a tenant's data may be deleted: retention, legal holds and their precedence.

Pure Python, free of Django: the sweep, a tenant's delete, erasure requests and account closure all ask here,
and the property tests drive these rules directly. Precedence, as the most trusted systems order it:

1. An active legal hold beats every deletion (retention, a tenant's delete, an erasure request, account closure,
   an administrator). A hold covers an asset by tenant, category (none named: all) and creation date range.
2. Among retention rules the longest wins: the tenant's own rule for a category (or the product default) never
   shortens a legal minimum (finance records: seven years).
3. Releasing a hold deletes nothing by itself: it only makes data eligible again for the next deletion.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class Category(StrEnum):
    DATASET = "dataset"
    CHECKPOINT = "checkpoint"
    JOB_LOG = "job_log"
    INFERENCE_PAYLOAD = "inference_payload"
    EXPORT = "export"
    USAGE_RECORD = "usage_record"
    INVOICE = "invoice"
    VOLUME = "volume"  # a tenant's persistent volume (and its snapshots), under its own data key


# Finance records: kept for their legal minimum whatever a tenant asks, and never zero-retention.
FINANCE = frozenset({Category.USAGE_RECORD, Category.INVOICE})

SEVEN_YEARS_DAYS = 7 * 365 + 2  # seven calendar years always hold at least two 29 Februaries
MAX_DAYS = 100 * 366  # a century: longer is "forever" in practice, and expiry dates must stay within datetime's range

# The product's defaults (overridden per category by the setting LADDER_RETENTION_DAYS, then per tenant).
DEFAULT_DAYS: dict[str, int] = {
    Category.DATASET: 365,
    Category.CHECKPOINT: 365,
    Category.JOB_LOG: 90,
    Category.INFERENCE_PAYLOAD: 30,
    Category.EXPORT: 30,
    Category.USAGE_RECORD: SEVEN_YEARS_DAYS,
    Category.INVOICE: SEVEN_YEARS_DAYS,
    Category.VOLUME: MAX_DAYS,  # kept until its tenant deletes it, unless the tenant sets a retention for volumes
}
# What the law asks: no rule, default or tenant's, goes below these.
LEGAL_MINIMUM_DAYS: dict[str, int] = {Category.USAGE_RECORD: SEVEN_YEARS_DAYS, Category.INVOICE: SEVEN_YEARS_DAYS}


def parse_days(text: str) -> dict[str, int]:
    """Read ``"dataset=365,job_log=90"`` into days per category; unknown categories and bad numbers are refused."""
    days: dict[str, int] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = entry.partition("=")
        name = name.strip()
        if not equals or name not in Category.__members__.values():
            known = ", ".join(Category)
            raise ValueError(f"retention entry {entry!r} is not 'category=days' with a category among {known}")
        if not value.strip().isdigit() or not 1 <= int(value) <= MAX_DAYS:
            raise ValueError(f"retention for {name} must be a whole number of days, 1 to {MAX_DAYS}")
        days[name] = int(value)
    return days


@dataclass(frozen=True)
class Rule:
    """A tenant's retention for one category: keep ``days`` after creation, or never persist it at all."""

    days: int | None
    zero_retention: bool = False

    def __post_init__(self) -> None:
        if self.zero_retention != (self.days is None):
            raise ValueError("a rule keeps N days or is zero retention, not both")


class RuleInvalid(ValueError):
    """A retention rule a tenant may not set; the message says why."""


def rule_check(category: Category, rule: Rule, *, legal_minimum_days: int) -> None:
    """Refuse a rule that would shorten a legal minimum (finance records) or drop finance records altogether."""
    if rule.zero_retention:
        if category in FINANCE or legal_minimum_days:
            raise RuleInvalid(f"{category} records have a legal minimum retention; they cannot be zero retention.")
        return
    if rule.days is None or not 1 <= rule.days <= MAX_DAYS:
        raise RuleInvalid(f"Retention must be 1 to {MAX_DAYS} days (or zero_retention).")
    if rule.days < legal_minimum_days:
        raise RuleInvalid(
            f"{category} records must be kept at least {legal_minimum_days} days (legal minimum); "
            f"{rule.days} would shorten it."
        )


def effective_days(rule: Rule, *, legal_minimum_days: int) -> int | None:
    """How long an asset is kept: the longest of the tenant's rule and the legal minimum. None: never stored."""
    if rule.days is None:
        return legal_minimum_days or None
    return max(rule.days, legal_minimum_days)


def expires_at(created_at: datetime, days: int) -> datetime:
    return created_at + timedelta(days=days)


# --- legal holds ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HoldScope:
    """What an active hold preserves: one tenant's assets of some categories (empty: all) created in a range."""

    id: int
    tenant_id: int
    categories: frozenset[str] = frozenset()
    created_from: datetime | None = None
    created_to: datetime | None = None

    def covers(self, tenant_id: int, category: str, created_at: datetime) -> bool:
        if tenant_id != self.tenant_id:
            return False
        if self.categories and category not in self.categories:
            return False
        if self.created_from is not None and created_at < self.created_from:
            return False
        return self.created_to is None or created_at <= self.created_to


class Holds:
    """The active holds, indexed by tenant: the one question every deletion asks."""

    def __init__(self, holds: Iterable[HoldScope]) -> None:
        by_tenant: dict[int, list[HoldScope]] = defaultdict(list)
        for hold in holds:
            by_tenant[hold.tenant_id].append(hold)
        for scopes in by_tenant.values():
            scopes.sort(key=lambda h: h.id)
        self._by_tenant = dict(by_tenant)

    def __len__(self) -> int:
        return sum(len(s) for s in self._by_tenant.values())

    def covering(self, tenant_id: int, category: str, created_at: datetime) -> list[int]:
        """Ids of the holds that preserve an asset, oldest first."""
        return [h.id for h in self._by_tenant.get(tenant_id, ()) if h.covers(tenant_id, category, created_at)]

    def first(self, tenant_id: int, category: str, created_at: datetime) -> int | None:
        for hold in self._by_tenant.get(tenant_id, ()):
            if hold.covers(tenant_id, category, created_at):
                return hold.id
        return None


# --- the sweep's decision for one asset ---------------------------------------------------------------------------


class Decision(StrEnum):
    KEEP = "keep"  # not expired, or already on its way
    SCHEDULE = "schedule"  # expired and unheld: shredding starts, cancellable until the waiting period ends
    HELD = "held"  # expired but a hold stops it
    SHRED = "shred"  # the waiting period is over and nothing holds it: destroy the data key now
    SUSPEND = "suspend"  # the waiting period is over but a hold now covers it: back to live, nothing destroyed


@dataclass(frozen=True)
class AssetFacts:
    id: int
    tenant_id: int
    category: str
    created_at: datetime
    state: str  # live | shredding | shredded
    shred_after: datetime | None = None


def decide(asset: AssetFacts, *, keep_days: int | None, holds: Holds, now: datetime) -> tuple[Decision, int | None]:
    """What the sweep does with one asset at ``now``, and the hold that stopped it (if any).

    ``keep_days`` is the effective retention of the asset's tenant and category (None: zero retention, so any
    stored one is expired at once). Holds are asked last, and always: nothing is destroyed under a hold.
    """
    if asset.state == "shredding":
        if asset.shred_after is None or asset.shred_after > now:
            return Decision.KEEP, None
        hold = holds.first(asset.tenant_id, asset.category, asset.created_at)
        return (Decision.SUSPEND, hold) if hold is not None else (Decision.SHRED, None)
    if asset.state != "live":
        return Decision.KEEP, None
    if keep_days is not None and expires_at(asset.created_at, keep_days) > now:
        return Decision.KEEP, None
    hold = holds.first(asset.tenant_id, asset.category, asset.created_at)
    return (Decision.HELD, hold) if hold is not None else (Decision.SCHEDULE, None)


def rules_for(
    overrides: Mapping[str, Rule], defaults: Mapping[str, int], minimums: Mapping[str, int]
) -> dict[str, int | None]:
    """Effective retention days per category for one tenant: its overrides over the product defaults."""
    return {
        category.value: effective_days(
            overrides.get(category.value, Rule(days=defaults[category.value])),
            legal_minimum_days=minimums.get(category.value, 0),
        )
        for category in Category
    }
