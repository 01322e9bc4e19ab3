"""Per-key throttling: each key has its own bucket; the refusal is problem+json with Retry-After."""

import pytest
from django.core.cache import cache

from api.throttling import PerKeyThrottle
from tests.conftest import assert_problem


@pytest.fixture
def three_per_minute(monkeypatch):
    cache.clear()
    monkeypatch.setattr(PerKeyThrottle, "THROTTLE_RATES", {"per_key": "3/min"})
    yield
    cache.clear()


def test_it_throttles_each_key_separately(three_per_minute, api, alice):
    first_key, second_key = api(alice), api(alice)
    for _ in range(3):
        assert first_key.get("/api/v1/tenant").status_code == 200
    response = first_key.get("/api/v1/tenant")
    assert_problem(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0
    assert second_key.get("/api/v1/tenant").status_code == 200
