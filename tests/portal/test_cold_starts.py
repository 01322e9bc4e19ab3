"""The portal's allocation page for a serverless endpoint shows its cold starts as the API publishes them: how many
wakes, P50/P90/P99 of the total and of each phase, of its requests' queue delay and execution time, and the latest
wakes; nothing of it for what is not an endpoint, and nothing of another tenant's."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.core.cache import cache

from portal.cold_starts import waited
from provisioning.models import Allocation, EndpointColdStart
from provisioning.services.cold_starts import endpoint_request_observe
from tests.support.billing import at, load_fleet, place, run
from tests.support.consoles import signed_in


def woken(allocation: Allocation, *totals: int) -> None:
    """A wake per total (ms): a tenth of it waiting for a device, no pull, the rest loading from the model cache."""
    for i, total in enumerate(totals):
        EndpointColdStart.objects.create(
            tenant_id=allocation.tenant_id,
            allocation=allocation,
            woke_at=at(minutes=i + 1),
            ready_at=at(minutes=i + 1) + timedelta(milliseconds=total),
            device_wait_ms=total // 10,
            image_pull_ms=0,
            model_load_ms=total - total // 10,
            total_ms=total,
            image_cached=True,
            model_source="volume",
        )


def figure(text: str, key: str) -> list[str]:
    found = re.search(rf'<tr data-figure="{key}">(.*?)</tr>', text, re.DOTALL)
    assert found, key
    return re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", found[1])


def test_the_endpoint_page_shows_its_cold_starts(alice: Any, acme: Any, charlie: Any) -> None:
    load_fleet()
    cache.clear()
    endpoint = run(place(acme, rung="serverless", gpus=1), at(0))
    woken(endpoint, 13_000, 9_000, 40_000, 11_000)
    running = endpoint.running_since
    assert running is not None
    endpoint_request_observe(
        allocation_id=endpoint.pk, received_at=running - timedelta(seconds=12), answered_at=running
    )
    for path in (f"/portal/allocations/{endpoint.pk}", f"/portal/allocations/{endpoint.pk}/live"):
        page = signed_in(alice).get(path)
        assert page.status_code == 200
        text = page.content.decode()
        assert "<h2>Cold starts</h2>" in text
        assert "4 wakes from zero replicas so far" in text
        assert figure(text, "total") == ["Cold start (wake to warm)", "11.0 s", "40.0 s", "40.0 s", "4"]
        assert figure(text, "device_wait") == ["Device wait", "1.1 s", "4.0 s", "4.0 s", "4"]
        assert figure(text, "image_pull") == ["Image pull", "0 ms", "0 ms", "0 ms", "4"]
        assert figure(text, "queue_delay") == ["Queue delay (per request)", "12.0 s", "12.0 s", "12.0 s", "1"]
        assert figure(text, "execution")[1:] == ["0 ms", "0 ms", "0 ms", "1"]
        assert "Requests: the last 512 requests." in text
        wakes = re.search(r"<ol class=\"events\" data-recent-wakes>(.*?)</ol>", text, re.DOTALL)
        assert wakes
        assert wakes[1].count("<li>") == 4
        assert (
            "11.0 s: device 1.1 s, image 0 ms (on the host already), model 9.9 s (volume)" in wakes[1]
        )  # newest first
    assert signed_in(charlie).get(f"/portal/allocations/{endpoint.pk}").status_code == 404


def test_an_endpoint_never_woken_says_so_and_a_container_shows_none(alice: Any, acme: Any) -> None:
    load_fleet()
    cache.clear()
    endpoint = run(place(acme, rung="serverless", gpus=1), at(0))
    text = signed_in(alice).get(f"/portal/allocations/{endpoint.pk}").content.decode()
    assert "0 wakes from zero replicas so far" in text
    assert figure(text, "total") == ["Cold start (wake to warm)", "—", "—", "—", "0"]
    container = run(place(acme, rung="container", gpus=1), at(0))
    assert "Cold starts" not in signed_in(alice).get(f"/portal/allocations/{container.pk}").content.decode()


def test_waits_read_as_people_read_them() -> None:
    assert [waited(None), waited(0), waited(850), waited(1000), waited(13_049)] == [
        "—",
        "0 ms",
        "850 ms",
        "1.0 s",
        "13.0 s",
    ]
