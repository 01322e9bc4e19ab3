"""The operator console's cold starts page and the selector it reads (``provisioning.selectors.cold_start_table``):
every serverless endpoint at work and every one woken in the window, each with its wakes' P50/P90/P99, the slowest
P90 first; staff of another role and tenants' members are refused."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.utils import timezone

from provisioning.models import Allocation, EndpointColdStart
from provisioning.selectors import cold_start_table
from provisioning.services.cold_starts import endpoint_request_observe
from provisioning.services.stopping import allocation_stop
from tests.support import SYSTEM
from tests.support.billing import at, load_fleet, place, run
from tests.support.consoles import signed_in


def woken(allocation: Allocation, *totals: int, days_ago: float = 1) -> None:
    when = timezone.now() - timedelta(days=days_ago)
    for total in totals:
        EndpointColdStart.objects.create(
            tenant_id=allocation.tenant_id,
            allocation=allocation,
            woke_at=when,
            ready_at=when + timedelta(milliseconds=total),
            total_ms=total,
            model_source="hub",
        )


def estate(acme: Any, globex: Any) -> dict[str, Allocation]:
    load_fleet()
    fast = run(place(acme, rung="serverless", gpus=1), at(0))
    slow = run(place(globex, rung="serverless", gpus=1), at(0))
    never = run(place(acme, rung="serverless", gpus=1), at(0))
    gone = run(place(acme, rung="serverless", gpus=1), at(0))
    woken(fast, *range(1000, 11_000, 1000))  # 1..10 s
    woken(slow, 30_000, 60_000, 90_000)
    woken(slow, 500_000, days_ago=40)  # before the window
    woken(gone, 5_000, days_ago=60)
    allocation_stop(allocation=gone, actor=SYSTEM)
    run(place(acme, rung="container", gpus=1), at(0))  # no endpoint: never listed
    return {"fast": fast, "slow": slow, "never": never, "gone": gone}


def test_the_selector_gives_each_endpoint_its_wakes_in_the_window_slowest_first(acme: Any, globex: Any) -> None:
    made = estate(acme, globex)
    table = cold_start_table(since=timezone.now() - timedelta(days=30))
    assert [row["allocation"].pk for row in table] == [made["slow"].pk, made["fast"].pk, made["never"].pk]
    slow, fast, never = (row["figures"] for row in table)
    assert (slow.count, slow.p50, slow.p90, slow.p99) == (3, 60_000, 90_000, 90_000)
    assert (fast.count, fast.p50, fast.p90, fast.p99) == (10, 5000, 9000, 10_000)
    assert never.count == 0


def test_the_cold_starts_page_shows_each_endpoints_percentiles(
    operator: Any, finance: Any, alice: Any, acme: Any, globex: Any
) -> None:
    made = estate(acme, globex)
    running = made["fast"].running_since
    assert running is not None
    for i in range(20):  # twenty requests to "fast": the first two held 3 s by a wake, each took its replica i*10 ms
        held = timedelta(seconds=3) if i < 2 else timedelta(0)
        received = running - held if i < 2 else running + timedelta(seconds=i)
        endpoint_request_observe(
            allocation_id=made["fast"].pk,
            received_at=received,
            answered_at=received + held + timedelta(milliseconds=10 * i),
        )
    page = signed_in(operator).get("/console/operators/cold-starts")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'href="/console/operators/cold-starts"' in text  # in the console's navigation

    def shown(allocation: Allocation) -> list[str]:
        found = re.search(rf'<tr data-endpoint="{allocation.pk}">(.*?)</tr>', text, re.DOTALL)
        assert found, allocation.pk
        return [cell.strip() for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", found[1], re.DOTALL)]

    # Wakes, then requests: how many, the P90 of their queue delay and of their execution time.
    assert shown(made["slow"])[1:] == ["globex", "running", "3", "60.0 s", "90.0 s", "90.0 s", "0", "—", "—"]
    assert shown(made["fast"])[1:] == ["acme", "running", "10", "5.0 s", "9.0 s", "10.0 s", "20", "0 ms", "170 ms"]
    assert shown(made["never"])[3:] == ["0", "—", "—", "—", "0", "—", "—"]
    assert "the last 512 requests" in text
    assert f'data-endpoint="{made["gone"].pk}"' not in text  # stopped, and no wake in the window
    assert text.index(f'data-endpoint="{made["slow"].pk}"') < text.index(f'data-endpoint="{made["fast"].pk}"')
    assert signed_in(finance).get("/console/operators/cold-starts").status_code == 403
    assert signed_in(alice).get("/console/operators/cold-starts").status_code == 403
