"""The operators' GPU pages without Prometheus: each still answers and says why it shows nothing; other staff and
tenants' members are refused. (With Prometheus: test_operator_gpu_activity.py.)"""

from __future__ import annotations

from typing import Any

from tests.support.billing import at, load_fleet, place, run
from tests.support.consoles import signed_in


def test_without_prometheus_the_gpu_pages_say_why(operator: Any, finance: Any, alice: Any, acme: Any) -> None:
    load_fleet()
    run(place(acme, gpus=1), at(0))
    client = signed_in(operator)
    idle = client.get("/console/operators/idle-gpus?days=7").content.decode()
    assert "No GPU activity now: Prometheus at http://127.0.0.1:9 did not answer" in idle
    assert 'aria-current="page">Last 7 days' in idle
    fleet = client.get("/console/operators/?colour=activity").content.decode()
    assert "No GPU activity now: Prometheus at http://127.0.0.1:9 did not answer" in fleet
    assert 'class="map by-activity"' in fleet
    check = client.get("/console/operators/metering-check").content.decode()
    assert "No allocation was billed in this window" in check  # its usage is from long ago: nothing to ask
    for page in ("idle-gpus", "metering-check"):
        assert signed_in(finance).get(f"/console/operators/{page}").status_code == 403
        assert signed_in(alice).get(f"/console/operators/{page}").status_code == 403
