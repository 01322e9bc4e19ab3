"""Per-key throttling: each key has its own bucket; the refusal is problem+json with Retry-After."""

import pytest
from django.core.cache import cache

from api.throttling import PerKeyThrottle
from tests.support import assert_problem


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
