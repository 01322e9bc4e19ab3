"""Every error the API returns is ``application/problem+json`` (RFC 9457) with a stable snake_case ``code``.

Body: ``type`` (``urn:ladder:problem:<code>``), ``title``, ``status``, ``detail``, ``code``, and for validation
errors ``errors``: a map from field to messages. DRF exceptions, service errors and Django's own 404/500 pages
under ``/api/`` all come through here.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.views import csrf, defaults
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import ServiceError

PROBLEM_CONTENT_TYPE = "application/problem+json"


class Problem(exceptions.APIException):
    """An API error with an explicit code, raised by views and the API's own machinery."""

    def __init__(self, status_code: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail=detail, code=code)
        self.status_code = status_code
        self.problem_code = code
        self.extra = extra


def problem_body(status_code: int, code: str, detail: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": f"urn:ladder:problem:{code}",
        "title": HTTPStatus(status_code).phrase,
        "status": status_code,
        "detail": detail,
        "code": code,
        **extra,
    }


def _field_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Flatten DRF's nested error detail to ``{"field.sub": ["message", ...]}``."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = "non_field_errors" if key == "non_field_errors" and not prefix else f"{prefix}{key}"
            for sub_key, messages in _field_errors(value, f"{name}.").items():
                out.setdefault(sub_key, []).extend(messages)
            if not isinstance(value, dict | list):
                out.setdefault(name, []).append(str(value))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix.rstrip(".") or "non_field_errors": [str(item) for item in detail]}
        for index, item in enumerate(detail):
            for sub_key, messages in _field_errors(item, f"{prefix}{index}.").items():
                out.setdefault(sub_key, []).extend(messages)
        return out
    return {prefix.rstrip(".") or "non_field_errors": [str(detail)]}


def problem_response(
    status_code: int, code: str, detail: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    return Response(
        problem_body(status_code, code, detail, **extra),
        status=status_code,
        headers=headers,
        content_type=PROBLEM_CONTENT_TYPE,
    )


def _service_problem(exc: ServiceError) -> tuple[dict[str, Any], dict[str, str] | None]:
    """A service error's problem body and headers (``Retry-After`` when it says when to come back)."""
    extra: dict[str, Any] = {}
    if exc.errors:
        extra["errors"] = {name: list(messages) for name, messages in exc.errors.items()}
    elif exc.field:
        extra["errors"] = {exc.field: [exc.detail]}
    retry = getattr(exc, "retry_after", None)
    wait = {"Retry-After": str(int(retry))} if retry is not None else None
    return problem_body(exc.status, exc.code, exc.detail, **extra, **exc.extra), wait


def service_error_response(exc: ServiceError) -> HttpResponse:
    """A service error as a plain Django response, for the few views that are not DRF's (kept lean)."""
    body, headers = _service_problem(exc)
    return HttpResponse(json.dumps(body), status=exc.status, content_type=PROBLEM_CONTENT_TYPE, headers=headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER. Anything it does not know is left to Django's 500 handler."""
    if isinstance(exc, ServiceError):
        body, wait = _service_problem(exc)
        return Response(body, status=exc.status, headers=wait, content_type=PROBLEM_CONTENT_TYPE)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]

    if isinstance(exc, exceptions.ValidationError):
        errors = _field_errors(exc.detail)
        first = next(iter(errors.items()))
        detail = f"{first[0]}: {first[1][0]}" if first[0] != "non_field_errors" else first[1][0]
        return problem_response(
            status.HTTP_422_UNPROCESSABLE_ENTITY, "validation_error", detail, headers, errors=errors
        )
    if isinstance(exc, Problem):
        return problem_response(exc.status_code, exc.problem_code, str(exc.detail), headers, **exc.extra)
    # DRF's codes are already stable snake_case (not_authenticated, permission_denied, throttled, ...); a
    # permission class may set its own (insufficient_scope).
    codes = exc.get_codes()
    code = codes if isinstance(codes, str) else exc.default_code
    return problem_response(exc.status_code, code, str(exc.detail), headers)


def _django_problem(status_code: int, code: str, detail: str) -> HttpResponse:
    return HttpResponse(
        json.dumps(problem_body(status_code, code, detail)), status=status_code, content_type=PROBLEM_CONTENT_TYPE
    )


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(("/api/", "/webhooks/"))


# Django's error views, for errors raised outside DRF. API paths get problem+json; other pages (the admin)
# keep Django's HTML pages.


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return _django_problem(404, "not_found", "No such resource.")
    return defaults.page_not_found(request, exception or Http404())


def handler500(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return _django_problem(500, "server_error", "The server failed to handle the request; it has been logged.")
    return defaults.server_error(request)


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return _django_problem(403, "permission_denied", "You do not have permission to perform this action.")
    return defaults.permission_denied(request, exception or DjangoPermissionDenied())


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return _django_problem(400, "bad_request", "The request could not be understood.")
    return defaults.bad_request(request, exception or ValueError())


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's ``CSRF_FAILURE_VIEW``: a request Django's CSRF check refuses. API views are exempt (DRF checks
    CSRF itself, for session callers only), so under ``/api/`` this answers only for a view that is not."""
    if _is_api(request):
        return _django_problem(403, "csrf_failed", f"CSRF verification failed: {reason}")
    return csrf.csrf_failure(request, reason)


class ProblemsAsJson:
    """For API views whose renderers are not JSON (the schema's YAML, the docs' HTML): their errors still go out
    as problem+json, not rendered as YAML or as an HTML page."""

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if isinstance(response, Response) and response.content_type == PROBLEM_CONTENT_TYPE:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response
