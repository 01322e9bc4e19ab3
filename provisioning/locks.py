"""Locks for the fleet inventory; their place in the product-wide lock order is written in ``core/locks.py``.

``lock_fleet`` serializes fleet loads: two loads upserting the same new hostnames would otherwise race on the
unique constraints and one would fail with an IntegrityError instead of finding the other's rows. Node state
changes do not take it; they compare-and-swap on the state column, which loads never write.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet

from provisioning.models import Node

# pg_advisory_xact_lock key of the fleet inventory (any fixed 64-bit number no other lock of the product uses).
FLEET_LOCK_KEY = 0x4C44_5246_4C45_4554  # "LDRFLEET"


def lock_fleet() -> None:
    """Held until the transaction ends. SQLite needs none: it admits one writer at a time."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FLEET_LOCK_KEY])


def lock_nodes(queryset: QuerySet[Node]) -> list[Node]:
    return list(queryset.select_for_update(no_key=True, of=("self",)).order_by("pk"))
