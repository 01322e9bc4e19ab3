"""/healthz and /readyz."""

from unittest import mock

from django.test import override_settings

from tests.support import assert_problem


def test_healthz_answers_without_a_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_the_database_and_inline_tasks(client, db):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "broker": "inline"}}


@override_settings(LADDER_TASKS_INLINE=False, CELERY_BROKER_URL="redis://127.0.0.1:1/0")
def test_readyz_names_an_unreachable_broker(client, db):
    response = client.get("/readyz")
    body = assert_problem(response, 503, "not_ready")
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"] != "ok"
    assert "broker" in body["detail"]


def test_readyz_names_a_broken_database(client, db):
    with mock.patch("api.health.connection.cursor", side_effect=RuntimeError("db down")):
        body = assert_problem(client.get("/readyz"), 503, "not_ready")
    assert "db down" in body["checks"]["database"]
    assert "database" in body["detail"]


def test_unknown_api_paths_answer_problem_json(client):
    assert_problem(client.get("/api/v1/nothing-here"), 404, "not_found")
