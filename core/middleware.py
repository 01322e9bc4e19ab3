"""Every request's id, log context and metrics, in one middleware that sits first, so it sees every response:
the API's problem+json errors, the portal's pages, a refusal by another middleware (CSRF, sign-in lockout) and
Django's 500 page alike.

- ``X-Request-ID``: the caller's when it is sane (``core.logs.request_id_accept``), else a new one (uuid4 hex);
  set on the request (``request.request_id``), bound to the log context and echoed on the response.
- Metrics: ``ladder_http_requests_total`` and ``ladder_http_request_duration_seconds`` by route (the URL
  pattern's name, ``app:name`` in a namespace; ``unmatched`` when nothing matched: never the raw path, which
  holds ids), method and status class. A streamed response is timed to its first byte.
- One log line per request (``core.requests``, ``request finished``) with method, route, status and duration; no
  body, no query string. A successful health probe or scrape is logged at DEBUG only.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from structlog.contextvars import clear_contextvars

from core.logs import context_bind, get_logger, request_id_accept
from core.metrics import HTTP_REQUEST_DURATION, HTTP_REQUESTS, status_class

REQUEST_ID_HEADER = "X-Request-ID"
# Methods outside this set are counted as "other": a client may send any token as a method.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# Probes and scrapes arrive every few seconds from every pod, and the gateway's check and JWKS with serverless
# traffic (the gateway keeps its own access log): their successes are logged at DEBUG only.
QUIET_ROUTES = frozenset(
    {
        "healthz",
        "readyz",
        "metrics",
        "gateway-authorize",
        "gateway-jwks",
        "simulated-dcgm-targets",
        "simulated-dcgm-metrics",
    }
)

log = get_logger("core.requests")


def route_of(request: HttpRequest) -> str:
    """The metric's ``route`` label: the matched URL pattern's name (with its namespace), else its pattern."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    if match.url_name:
        return match.view_name  # "portal:home", "allocation-detail"
    return match.route or "unnamed"


class RequestContextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        start = time.perf_counter()
        request_id = request_id_accept(request.headers.get(REQUEST_ID_HEADER)) or uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        clear_contextvars()  # a thread serves one request after another: nothing of the last one stays
        context_bind(request_id=request_id)
        response = self.get_response(request)  # an exception in a view is a response by now (Django's 500)
        elapsed = time.perf_counter() - start
        response[REQUEST_ID_HEADER] = request_id
        route = route_of(request)
        method = request.method if request.method in METHODS else "other"
        status = status_class(response.status_code)
        HTTP_REQUESTS.labels(route, method, status).inc()
        HTTP_REQUEST_DURATION.labels(route, method, status).observe(elapsed)
        quiet = route in QUIET_ROUTES and response.status_code < 400
        (log.debug if quiet else log.info)(
            "request finished",
            method=method,
            route=route,
            status=response.status_code,
            duration_ms=round(elapsed * 1000, 2),
        )
        clear_contextvars()
        return response

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: dict[str, Any]) -> None:
        """Bind the route, and the allocation the URL names (``allocation_id``, or the ``pk`` of an allocation
        route)."""
        route = route_of(request)
        allocation = kwargs.get("allocation_id")
        if allocation is None and route.startswith("allocation-"):
            allocation = kwargs.get("pk")
        context_bind(route=route, allocation_id=_int_or_none(allocation))


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
