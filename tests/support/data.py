"""Helpers for tests of the data lifecycle: a fleet with regions, assets registered as of a moment."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from compliance.services.assets import data_asset_create
from provisioning.services.fleet import fleet_load
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def regions() -> Any:
    """eu-west (EU, with a hall fenced for EU) and us-east (US)."""
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def asset(tenant: Any, *, category: str = "dataset", at: datetime = T0, region: str = "eu-west", **extra: Any) -> Any:
    extra.setdefault("size_bytes", None if "content" in extra else 1000)
    return data_asset_create(
        tenant=tenant,
        name=extra.pop("name", f"{category}-{at:%Y%m%d}"),
        category=category,
        region=region,
        actor=SYSTEM,
        now=at,
        **extra,
    )
