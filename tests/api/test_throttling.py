"""Per-key throttling: each key has its own bucket; the refusal is problem+json with Retry-After. Anonymous callers a
view names (a signed dataset link, a guest's attestation credential) are counted per what they present, never per
address (tenants' workloads share NATs); only anonymous public reads are counted per client address, and a
forwarded-for header is believed only from the proxies ``LADDER_TRUSTED_PROXIES`` counts."""

from typing import Any

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from api.throttling import PerKeyThrottle
from compliance.services.assets import data_asset_create
from compliance.services.downloads import asset_download_url
from lifecycle.services.customers import allocation_request
from provisioning.drivers.base import SimulatedProvisioner
from provisioning.services.attestation import attestation_credential
from provisioning.services.placing import AllocationSpec
from tests.support import SYSTEM, assert_problem
from tests.support.billing import load_fleet


@pytest.fixture
def three_per_minute(monkeypatch):
    cache.clear()
    monkeypatch.setattr(PerKeyThrottle, "THROTTLE_RATES", {"per_key": "3/min"})
    clock = {"now": 600.0}  # the start of a window
    monkeypatch.setattr(PerKeyThrottle, "timer", lambda self: clock["now"])
    yield clock
    cache.clear()


def test_it_throttles_each_key_separately(three_per_minute, api, alice):
    first_key, second_key = api(alice), api(alice)
    for _ in range(3):
        assert first_key.get("/api/v1/tenant").status_code == 200
    response = first_key.get("/api/v1/tenant")
    assert_problem(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
    assert second_key.get("/api/v1/tenant").status_code == 200


def test_the_count_starts_again_in_the_next_window(three_per_minute, api, alice):
    client = api(alice)
    for _ in range(3):
        assert client.get("/api/v1/tenant").status_code == 200
    three_per_minute["now"] += 20
    response = client.get("/api/v1/tenant")
    assert_problem(response, 429, "throttled")
    assert int(response["Retry-After"]) == 40  # until the window ends
    three_per_minute["now"] += 40
    assert client.get("/api/v1/tenant").status_code == 200


# --- who is counted: keys, named callers, addresses -----------------------------------------------------------------


def test_an_anonymous_reader_is_counted_by_address_and_a_forged_forwarded_for_changes_nothing(three_per_minute, db):
    client = APIClient(REMOTE_ADDR="198.51.100.7")
    for i in range(3):
        assert client.get("/api/v1/prices", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code == 200
    assert_problem(client.get("/api/v1/prices", HTTP_X_FORWARDED_FOR="203.0.113.99"), 429, "throttled")
    assert APIClient(REMOTE_ADDR="198.51.100.8").get("/api/v1/prices").status_code == 200


def test_behind_a_trusted_proxy_the_address_is_the_one_it_saw(three_per_minute, settings, db):
    settings.LADDER_TRUSTED_PROXIES = 1
    proxy = APIClient(REMOTE_ADDR="10.0.0.1")
    for forged in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):  # what the client wrote itself comes first
        assert proxy.get("/api/v1/prices", HTTP_X_FORWARDED_FOR=f"{forged}, 203.0.113.1").status_code == 200
    assert_problem(proxy.get("/api/v1/prices", HTTP_X_FORWARDED_FOR="192.0.2.4, 203.0.113.1"), 429, "throttled")
    assert proxy.get("/api/v1/prices", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 200  # another client


def test_dataset_links_are_counted_per_link_never_per_address(three_per_minute, settings, acme, globex):
    load_fleet()
    mine, theirs = (
        data_asset_create(tenant=t, name="w", category="dataset", region="eu-west", content=b"weights", actor=SYSTEM)
        for t in (acme, globex)
    )
    nat = APIClient(REMOTE_ADDR="10.0.0.9")  # every tenant's workloads reach Ladder through one egress address

    def link(asset):
        return asset_download_url(asset=asset, now=timezone.now()).removeprefix(settings.LADDER_PUBLIC_URL)

    for _ in range(3):
        assert nat.get(link(mine)).content == b"weights"
    response = nat.get(link(mine))
    assert_problem(response, 429, "throttled")
    assert int(response["Retry-After"]) == 60
    assert nat.get(link(theirs)).content == b"weights"
    forged = link(theirs)[:-1] + ("0" if link(theirs)[-1] != "0" else "1")
    assert_problem(nat.get(forged), 403, "download_refused")


def test_a_guest_is_counted_per_credential_never_per_address(three_per_minute, acme):
    load_fleet()
    acme.residency_jurisdictions, acme.sovereign = ["EU"], True
    acme.save()
    spec = AllocationSpec(rung="confidential_vm", gpu_models=("H200-141GB",), gpus=1)
    allocation = allocation_request(tenant=acme, name="secret", spec=spec, actor=SYSTEM)
    SimulatedProvisioner().provision(allocation.pk)
    nat = APIClient(REMOTE_ADDR="10.0.0.9")
    url = f"/api/v1/attestation/{allocation.pk}/challenge"
    guest: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {attestation_credential(allocation.pk)}"}
    for _ in range(3):
        assert nat.post(url, **guest).status_code == 200
    assert_problem(nat.post(url, **guest), 429, "throttled")
    # Another guest behind the same address is not refused for it (here: a credential for no running allocation).
    other: dict[str, Any] = {"HTTP_AUTHORIZATION": f"Bearer {attestation_credential(allocation.pk + 1)}"}
    assert_problem(nat.post(f"/api/v1/attestation/{allocation.pk + 1}/challenge", **other), 401, "not_authenticated")
