"""The API over real HTTP: a live server, a real socket, the demo keys."""

import json
import urllib.error
import urllib.request

import pytest
from django.core.management import call_command


def _call(url, method="GET", key=None, body=None, headers=None):
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


@pytest.fixture
def demo(transactional_db):
    from io import StringIO

    out = StringIO()
    call_command("seed_demo", "--json", "--force", stdout=out)
    return json.loads(out.getvalue())


def test_the_demo_keys_work_over_http(live_server, demo):
    alice = demo["tenants"]["acme"]["users"]["alice"]["api_key"]
    status, _, body = _call(f"{live_server.url}/api/v1/tenant", key=alice)
    assert status == 200
    assert body["slug"] == "acme"
    status, _, body = _call(f"{live_server.url}/api/v1/members", key=alice)
    assert [m["username"] for m in body["results"]] == ["alice", "bob"]


def test_errors_are_problem_json_on_the_wire(live_server, demo):
    status, headers, body = _call(f"{live_server.url}/api/v1/tenant")
    assert status == 401
    assert headers["Content-Type"] == "application/problem+json"
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert body["code"] == "not_authenticated"


def test_idempotent_posts_over_http(live_server, demo):
    alice = demo["tenants"]["acme"]["users"]["alice"]["api_key"]
    url = f"{live_server.url}/api/v1/members"
    invite = {"username": "dora", "email": "dora@acme.example", "role": "viewer"}
    first = _call(url, "POST", alice, invite, {"Idempotency-Key": "invite-dora"})
    second = _call(url, "POST", alice, invite, {"Idempotency-Key": "invite-dora"})
    assert first[0] == second[0] == 201
    assert second[1]["Idempotent-Replayed"] == "true"
    assert second[2] == first[2]


def test_compliance_reads_and_verifies_the_audit_log_over_http(live_server, demo):
    officer = demo["staff"]["compliance"]["api_key"]
    status, _, body = _call(f"{live_server.url}/api/v1/compliance/audit-events?action=tenant.", key=officer)
    assert status == 200
    assert {e["action"] for e in body["results"]} == {"tenant.created"}
    status, _, body = _call(f"{live_server.url}/api/v1/compliance/audit-events/verify", key=officer)
    assert body["ok"] is True
    assert body["count"] > 10
