"""/api/v1/finance/exports: finance streams a small range, signed, without writing anything; a large range is an
export job started by a POST (audited), polled, downloaded and verified; bad parameters name their field; only
finance staff get in."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import ExportJob
from compliance.domain.verify import load_public_key
from compliance.domain.verify_export import verify_export
from core.models import AuditEvent
from lifecycle.services.exports import ExportSpec, export_job_request
from tests.api.test_reads_never_write import WRITES, session
from tests.support import SYSTEM, assert_problem
from tests.support.exports import generated_month

URL = "/api/v1/finance/exports"
RANGE = {"from": "2026-10-01", "to": "2026-10-01"}


@pytest.fixture
def usage(acme: Any, globex: Any, settings: Any, tmp_path: Any) -> None:
    settings.LADDER_EXPORT_DIR = str(tmp_path / "exports")
    generated_month([acme, globex], days=1)


def _key(client: Any) -> Any:
    return load_public_key(json.dumps(client.get("/api/v1/compliance/audit-key").json()).encode())


def _signature(response: Any) -> dict[str, Any]:
    return json.loads(base64.urlsafe_b64decode(response["Ladder-Export-Signature"]))


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_finance_streams_a_small_range_signed_and_writes_nothing(usage, finance, client, tmp_path, file_format):
    with CaptureQueriesContext(connection) as queries:
        response = session(finance).get(URL, {**RANGE, "detail": "true", "format": file_format})
    assert response.status_code == 200
    assert not [q["sql"] for q in queries.captured_queries if WRITES.match(q["sql"])]
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert response["Content-Disposition"].startswith("attachment")
    signature = _signature(response)
    assert signature["sha256"] == hashlib.sha256(body).hexdigest()
    assert (signature["detail"], signature["file_format"], signature["tenant"]) == (True, file_format, None)
    path = tmp_path / signature["file"]
    path.write_bytes(body)
    assert verify_export(path, signature, _key(client)).startswith("OK")
    if file_format == "csv":
        assert body.startswith(b"BilledCost,")
        assert body.count(b"\n") == signature["rows"] + 1


def test_a_large_range_is_refused_with_a_pointer_to_the_job(usage, finance, acme):
    client = session(finance)
    body = assert_problem(client.get(URL, {"from": "2026-10-01", "to": "2026-10-08"}), 413, "export_too_large")
    assert "POST" in body["detail"]
    assert body["max_days"] == 7
    one_tenant = {"from": "2026-10-01", "to": "2026-10-31", "tenant": "acme"}
    assert client.get(URL, one_tenant).status_code == 200  # 31 days of one tenant stream
    assert_problem(client.get(URL, {**one_tenant, "to": "2026-11-01"}), 413, "export_too_large")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"to": "2026-10-01"}, "from"),
        ({"from": "2026-10-01", "to": "1 Oct"}, "to"),
        ({"from": "2026-10-02", "to": "2026-10-01"}, "to"),
        ({**RANGE, "tenant": "nobody"}, "tenant"),
        ({**RANGE, "format": "xlsx"}, "format"),
        ({**RANGE, "detail": "maybe"}, "detail"),
    ],
)
def test_bad_parameters_name_their_field(usage, finance, params, field):
    body = assert_problem(session(finance).get(URL, params), 422, "validation_error")
    assert field in body["errors"]


def test_a_job_is_posted_audited_run_and_served(usage, finance, client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = session(finance).post(
            URL, {"from": "2026-10-01", "to": "2026-10-31", "format": "parquet"}, format="json"
        )
    assert response.status_code == 202, response.content
    job = response.json()
    assert response["Location"] == f"{URL}/{job['id']}"
    event = AuditEvent.objects.get(action="finance.export_requested")
    assert (event.target_id, event.actor_label, event.data["to"]) == (str(job["id"]), "finance", "2026-10-31")
    shown = session(finance).get(f"{URL}/{job['id']}").json()
    assert shown["state"] == "done"
    assert shown["rows"] > 0
    download = session(finance).get(shown["download"])
    assert download.status_code == 200
    data = b"".join(download.streaming_content)  # type: ignore[attr-defined]
    assert hashlib.sha256(data).hexdigest() == shown["sha256"]
    signature = session(finance).get(shown["signature"]).json()
    assert signature == _signature(download)
    stored = ExportJob.objects.get(pk=job["id"])
    assert verify_export(Path(stored.path), signature, _key(client)).startswith("OK")


def test_a_job_not_done_yet_is_not_served(usage, finance):
    job = export_job_request(spec=ExportSpec(*_days(), None, False, "csv"), actor=SYSTEM)  # its task not run
    client = session(finance)
    assert client.get(f"{URL}/{job.pk}").json()["state"] == "pending"
    assert_problem(client.get(f"{URL}/{job.pk}/download"), 409, "export_not_ready")
    assert_problem(client.get(f"{URL}/{job.pk}/signature"), 409, "export_not_ready")
    assert_problem(client.get(f"{URL}/{job.pk + 1000}"), 404, "not_found")


def _days() -> tuple[date, date]:
    return date(2026, 10, 1), date(2026, 10, 2)


@pytest.mark.parametrize("who", ["alice", "charlie", "operator", "compliance"])
def test_only_finance_gets_in(usage, request, who):
    user = request.getfixturevalue(who)
    job = export_job_request(spec=ExportSpec(*_days(), None, False, "csv"), actor=SYSTEM)
    client = session(user)
    assert_problem(client.get(URL, RANGE), 403, "permission_denied")
    assert_problem(client.post(URL, {**RANGE}, format="json"), 403, "permission_denied")
    for path in (f"{URL}/{job.pk}", f"{URL}/{job.pk}/download", f"{URL}/{job.pk}/signature", f"{URL}/424242"):
        assert_problem(client.get(path), 403, "permission_denied")  # before any lookup: no job's existence leaks
