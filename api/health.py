"""Liveness and readiness probes (plain Django views: no authentication, no throttling)."""

from __future__ import annotations

import json

from celery import current_app
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from api.problems import PROBLEM_CONTENT_TYPE, problem_body


def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any failure means not ready; the message goes to the operator
        return f"{type(exc).__name__}: {exc}"
    return None


def _check_broker() -> str | None:
    if settings.LADDER_TASKS_INLINE:
        return None
    try:
        with current_app.connection_for_write(settings.CELERY_BROKER_URL) as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def readyz(request: HttpRequest) -> HttpResponse:
    failures = {
        name: error
        for name, check in (("database", _check_database), ("broker", _check_broker))
        if (error := check()) is not None
    }
    checks = {
        "database": failures.get("database", "ok"),
        "broker": failures.get("broker", "inline" if settings.LADDER_TASKS_INLINE else "ok"),
    }
    if not failures:
        return JsonResponse({"status": "ready", "checks": checks})
    body = problem_body(503, "not_ready", f"Not ready: {', '.join(failures)} unreachable.", checks=checks)
    return HttpResponse(json.dumps(body), status=503, content_type=PROBLEM_CONTENT_TYPE)
