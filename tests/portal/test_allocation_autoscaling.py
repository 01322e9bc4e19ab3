"""An endpoint's allocation page says how it scales, in plain words and as applied (its own settings, the defaults
for the rest); other rungs' pages say nothing of it, and another tenant's endpoint is not found."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from provisioning.domain.workloads import Autoscaling, Workload
from provisioning.models import Allocation
from provisioning.services.fleet import fleet_load
from provisioning.services.placing import AllocationSpec, allocation_request
from tests.support import SYSTEM
from tests.support.fleet_documents import small_fleet

H100 = "H100-SXM-80GB"


@pytest.fixture
def fleet(db: None) -> Any:
    return fleet_load(document=small_fleet(), actor=SYSTEM)


def placed(tenant: Any, rung: str, autoscaling: Autoscaling | None = None, gpus: int = 4) -> Allocation:
    workload = Workload(image="vllm/vllm-openai:v0.11.0", autoscaling=autoscaling)
    spec = AllocationSpec(rung=rung, gpu_models=(H100,), gpus=gpus)
    return allocation_request(tenant=tenant, name="chat", spec=spec, actor=SYSTEM, workload=workload)


def page(user: Any, allocation: Allocation) -> Any:
    client = Client()
    client.force_login(user)
    return client.get(f"/portal/allocations/{allocation.pk}")


def said(answer: Any) -> str:
    html = answer.content.decode()
    assert answer.status_code == 200, html
    start = html.index("data-autoscaling>") + len("data-autoscaling>")
    return html[start : html.index("</dd>", start)]


def test_an_endpoints_page_says_how_it_scales(alice: Any, acme: Any, fleet: Any, settings: Any) -> None:
    settings.LADDER_SERVERLESS_IDLE_SECONDS = 600
    words = said(page(alice, placed(acme, "serverless")))
    assert words == (
        "Scales to zero after 10 min with no request waiting or in flight: no GPU held and nothing billed; the next "
        "request wakes it. Up to 3 replicas, one for every 4 requests waiting or in flight. Scales up at once; "
        "scales down after 5 min of lower demand."
    )


def test_its_own_settings_are_said_as_asked(alice: Any, acme: Any, fleet: Any) -> None:
    asked = Autoscaling(
        min_replicas=1,
        max_replicas=2,
        target_in_flight=8,
        scale_up_window_s=30,
        scale_down_window_s=900,
        buffer_replicas=1,
        signal="kv_cache",
        kv_cache_target=Decimal("0.7"),
    )
    words = said(page(alice, placed(acme, "serverless", asked)))
    assert words == (
        "Never scales to zero: at least 1 replica always running. Up to 2 replicas, one for every 8 requests waiting "
        "or in flight, or more when the model&#x27;s KV cache is over 70% full. Scales up once demand has held for "
        "30 s; scales down after 15 min of lower demand. Keeps 1 replica warm beyond demand while requests come in."
    )


def test_other_rungs_say_nothing_of_it_and_another_tenant_sees_nothing(
    alice: Any, acme: Any, charlie: Any, fleet: Any
) -> None:
    container = page(alice, placed(acme, "container", gpus=1))
    assert container.status_code == 200
    assert "data-autoscaling" not in container.content.decode()
    endpoint = placed(acme, "serverless")
    assert page(charlie, endpoint).status_code == 404
