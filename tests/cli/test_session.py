"""The command line's HTTP behaviour without a server: retries on 429 and 503 as the answer says, and how a
refusal reads (httpx's MockTransport stands in for the network)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from ladder_cli.errors import NOT_FOUND, NOT_SIGNED_IN, REFUSED, refusal
from ladder_cli.session import ATTEMPTS, RetryingTransport, retry_after


def _transport(answers: list[httpx.Response]) -> tuple[RetryingTransport, list[float], list[httpx.Request]]:
    slept: list[float] = []
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    return RetryingTransport(httpx.MockTransport(handler), sleep=slept.append), slept, seen


def test_a_throttled_call_waits_as_long_as_retry_after_says_then_succeeds() -> None:
    transport, slept, seen = _transport(
        [httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(503), httpx.Response(200, json={})]
    )
    with httpx.Client(transport=transport) as client:
        answer = client.post("http://ladder.test/api/v1/allocations", headers={"Idempotency-Key": "k1"}, json={})
    assert answer.status_code == 200
    assert slept == [2.0, 1.0]  # as told; then backoff (0.5 s doubled per attempt)
    assert [request.headers["Idempotency-Key"] for request in seen] == ["k1"] * 3  # the same request each time


def test_every_post_carries_one_idempotency_key_over_its_retries() -> None:
    transport, _, seen = _transport([httpx.Response(503), httpx.Response(201, json={}), httpx.Response(200)])
    with httpx.Client(transport=transport) as client:
        client.post("http://ladder.test/api/v1/volumes", json={})
        client.get("http://ladder.test/api/v1/volumes")
    first, again, read = seen
    assert len(first.headers["Idempotency-Key"]) == 32
    assert again.headers["Idempotency-Key"] == first.headers["Idempotency-Key"]
    assert "Idempotency-Key" not in read.headers


def test_it_gives_up_after_the_last_attempt_and_shows_the_answer() -> None:
    transport, slept, _ = _transport([httpx.Response(503) for _ in range(ATTEMPTS)])
    with httpx.Client(transport=transport) as client:
        assert client.get("http://ladder.test/").status_code == 503
    assert len(slept) == ATTEMPTS - 1


def test_a_wait_longer_than_a_minute_is_not_waited_for() -> None:
    transport, slept, _ = _transport([httpx.Response(429, headers={"Retry-After": "3600"})])
    with httpx.Client(transport=transport) as client:
        assert client.get("http://ladder.test/").status_code == 429
    assert slept == []


def test_other_errors_are_not_retried() -> None:
    transport, slept, _ = _transport([httpx.Response(409, json={"code": "quota"})])
    with httpx.Client(transport=transport) as client:
        assert client.get("http://ladder.test/").status_code == 409
    assert slept == []


def test_retry_after_may_be_an_http_date() -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    wait = retry_after(httpx.Headers({"Retry-After": format_datetime(when, usegmt=True)}), 0)
    assert 28 <= wait <= 30


@pytest.mark.parametrize(
    ("status", "body", "exit_code", "line"),
    [
        (
            409,
            b'{"code": "residency", "detail": "acme may not use us-east.", "reasons": ["region us-east"]}',
            REFUSED,
            "ladder: refused: acme may not use us-east.: region us-east (residency)",
        ),
        (
            422,
            b'{"code": "validation_error", "detail": "Invalid input.", "errors": {"gpus": ["At most 8."]}}',
            REFUSED,
            "ladder: refused: gpus: At most 8. (validation_error)",
        ),
        (
            401,
            b'{"code": "not_authenticated", "detail": "No key."}',
            NOT_SIGNED_IN,
            "ladder: the API key was refused: No key. (run `ladder login`, or check LADDER_API_KEY) "
            "(not_authenticated)",
        ),
        (404, b'{"code": "not_found", "detail": "Not found."}', NOT_FOUND, "ladder: Not found. (not_found)"),
        (502, b"<html>Bad gateway</html>", REFUSED, "ladder: refused: <html>Bad gateway</html> (http_502)"),
    ],
)
def test_a_refusal_is_one_line_with_its_code(status: int, body: bytes, exit_code: int, line: str) -> None:
    error = refusal(status, body)
    assert error.exit_code == exit_code
    assert error.line() == line
