"""Helpers the tests share: the system actor, services a test requires, a teammate's client, problem bodies."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from django.db import connection
from rest_framework.test import APIClient

from core.actor import Actor
from tenancy.domain.roles import TenantRole
from tenancy.models import Tenant
from tenancy.services import member_invite

ROOT = Path(__file__).resolve().parents[2]  # the repository
DATA = ROOT / "tests" / "data"  # sample files (see data/README.md)
K8S_TOKEN = "k8s-test-token"  # the fake Kubernetes API server's token (tests/conftest.py cluster_api)
CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
SYSTEM = Actor.system("tests")


def require(available: bool, what: str) -> None:
    """Skip a test whose service is missing, except under CI, where that is a failure."""
    if available:
        return
    if CI:
        pytest.fail(f"{what} is required under CI=true but is not available")
    pytest.skip(f"{what} is not available")


def require_postgres() -> None:
    require(connection.vendor == "postgresql", "PostgreSQL (set DATABASE_URL=postgres://...)")


def redis_reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=1):
            return True
    except OSError:
        return False


def teammate(tenant: Tenant, role: str, username: str | None = None) -> APIClient:
    """A client signed in by session as a new member of ``tenant`` with ``role`` (viewers and billing users may
    hold read-only keys only, so a session is how they write, or are refused)."""
    username = username or f"{role}-user"
    user = member_invite(
        tenant=tenant,
        actor_role=TenantRole.OWNER,
        username=username,
        email=f"{username}@{tenant.slug}.test",
        role=role,
        actor=SYSTEM,
    ).user
    client = APIClient()
    client.force_authenticate(user)
    return client


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    """The response is problem+json with this status and stable code; returns the body."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"urn:ladder:problem:{code}"
    assert body["title"]
    assert body["detail"]
    return body
