"""The SDK's client as the command line uses it: the stored credentials, retries on 429 and 503 that honour
``Retry-After``, and answers turned into values or into the CliError that ends the command."""

from __future__ import annotations

import email.utils
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, TypeVar

import httpx
from ladder_sdk import AuthenticatedClient, Client
from ladder_sdk.types import Response

from ladder_cli import __version__
from ladder_cli.config import Credentials, credentials, ladder_url
from ladder_cli.errors import REFUSED, CliError, refusal

T = TypeVar("T")

RETRIED = (HTTPStatus.TOO_MANY_REQUESTS, HTTPStatus.SERVICE_UNAVAILABLE)
ATTEMPTS = 6  # the first try and five retries
LONGEST_WAIT = 60.0  # seconds; a longer Retry-After is not waited for: the answer is shown instead
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


def retry_after(headers: httpx.Headers, attempt: int) -> float:
    """Seconds to wait before the next try: the answer's Retry-After (seconds or an HTTP date), else exponential
    backoff from half a second."""
    value = headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    if value:
        when = email.utils.parsedate_to_datetime(value)
        if when is not None:
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return min(0.5 * 2**attempt, 8.0)


class RetryingTransport(httpx.BaseTransport):
    """Tries again on 429 and 503 (Ladder did nothing: throttled, or waking an endpoint), waiting as told.
    Every POST carries an Idempotency-Key (a new one unless the command set its own), the same on each try, so
    trying it again never acts twice."""

    def __init__(self, inner: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and "Idempotency-Key" not in request.headers:
            request.headers["Idempotency-Key"] = uuid.uuid4().hex
        for attempt in range(ATTEMPTS):
            response = self.inner.handle_request(request)
            if response.status_code not in RETRIED or attempt == ATTEMPTS - 1:
                return response
            wait = retry_after(response.headers, attempt)
            if wait > LONGEST_WAIT:
                return response
            response.read()
            response.close()
            self.sleep(wait)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.inner.close()


def client(creds: Credentials | None = None, transport: httpx.BaseTransport | None = None) -> AuthenticatedClient:
    creds = creds or credentials()
    return AuthenticatedClient(
        base_url=creds.url,
        token=creds.api_key,
        timeout=TIMEOUT,
        headers={"User-Agent": f"ladder-cli/{__version__}"},
        httpx_args={"transport": RetryingTransport(transport)},
    )


def public_client() -> Client:
    """For the reads anyone may make (offerings): no key is sent, so they work before `ladder login` too."""
    return Client(
        base_url=ladder_url(),
        timeout=TIMEOUT,
        headers={"User-Agent": f"ladder-cli/{__version__}"},
        httpx_args={"transport": RetryingTransport()},
    )


def unreachable(url: str, error: Exception) -> CliError:
    return CliError(f"cannot reach Ladder at {url}: {error}", REFUSED, "unreachable")


def answer(call: Callable[..., Response[Any]], api: AuthenticatedClient | Client, **kwargs: Any) -> Any:
    """Call an SDK operation's ``sync_detailed``; its parsed body when it succeeded, else the refusal's CliError."""
    try:
        response = call(client=api, **kwargs)
    except httpx.TransportError as error:
        raise unreachable(api._base_url, error) from error
    status = int(response.status_code)
    if 200 <= status < 300:
        return response.parsed
    raise refusal(status, response.content)


def every(call: Callable[..., Response[Any]], api: AuthenticatedClient, **kwargs: Any) -> Iterator[Any]:
    """Every item of a cursor-paginated list, page after page."""
    cursor: str | None = None
    while True:
        page = answer(call, api, page_size=500, **({"cursor": cursor} if cursor else {}), **kwargs)
        yield from page.results
        following = page.next_ if isinstance(page.next_, str) else None
        if not following:
            return
        cursor = httpx.URL(following).params.get("cursor")
