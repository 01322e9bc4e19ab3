"""Ladder's reads of Prometheus's HTTP API (``core.prometheus``), against a real Prometheus: instant and range
queries as plain samples, NaN left out, and a Prometheus that is down or refuses the query reported in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.prometheus import PrometheusUnavailable, instant, ranged
from tests.support.prometheus import Prometheus


def test_instant_and_range_queries_answer_as_samples(prometheus_clock: Prometheus) -> None:
    now = datetime.now(UTC)
    found = instant('label_replace(vector(2.5), "route", "ldr-1", "", "")', at=now)
    assert [(s.labels, s.value) for s in found] == [({"route": "ldr-1"}, 2.5)]
    assert [s.value for s in instant("scalar(vector(7))", at=now)] == [7.0]
    assert instant("0/0", at=now) == []  # NaN: no sample
    (series,) = ranged("vector(1)", start=now - timedelta(minutes=1), end=now, step_seconds=15)
    assert [value for _, value in series.points] == [1.0] * 5
    assert series.points[-1][0] == pytest.approx(now.timestamp(), abs=1)


def test_a_refused_query_and_a_prometheus_that_is_down_say_why(prometheus_clock: Prometheus, settings: object) -> None:
    now = datetime.now(UTC)
    with pytest.raises(PrometheusUnavailable, match=r"refused the query \(400\): .*parse error"):
        instant("sum(", at=now)
    with pytest.raises(PrometheusUnavailable, match=r"Prometheus at http://127.0.0.1:9 did not answer"):
        instant("up", at=now, url="http://127.0.0.1:9")
