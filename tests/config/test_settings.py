"""Settings come from the environment with safe defaults; secrets may come from files."""

import os
import subprocess
import sys

from tests.support import ROOT


def _settings(env: dict[str, str], expr: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "LADDER_TASKS_INLINE"}}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    code = f"import django; django.setup(); from django.conf import settings as s; print({expr})"
    return subprocess.run([sys.executable, "-c", code], env=clean, cwd=ROOT, capture_output=True, text=True)


def test_it_refuses_to_start_without_a_secret_key_unless_debug():
    refused = _settings({}, "s.DEBUG")
    assert refused.returncode != 0
    assert "SECRET_KEY" in refused.stderr
    assert _settings({"DEBUG": "1"}, "s.DEBUG").stdout.strip() == "True"


def test_secrets_may_come_from_files(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file")
    result = _settings({"SECRET_KEY_FILE": str(secret)}, "s.SECRET_KEY")
    assert result.stdout.strip() == "from-a-file", result.stderr


def test_production_defaults_are_safe():
    result = _settings({"SECRET_KEY": "x"}, "s.DEBUG, s.CELERY_TASK_ALWAYS_EAGER, s.SESSION_COOKIE_SECURE")
    assert result.stdout.strip() == "False False True", result.stderr


def test_tasks_run_inline_only_when_asked():
    result = _settings({"SECRET_KEY": "x", "LADDER_TASKS_INLINE": "1"}, "s.CELERY_TASK_ALWAYS_EAGER")
    assert result.stdout.strip() == "True"


def test_database_url_selects_the_database():
    result = _settings(
        {"SECRET_KEY": "x", "DATABASE_URL": "postgres://u@db.example:5433/ladder"},
        "s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME']",
    )
    assert result.stdout.strip() == "django.db.backends.postgresql ladder"


def test_the_volume_classes_are_read_at_start_and_a_mistake_stops_it():
    good = {
        "SECRET_KEY": "x",
        "LADDER_VOLUME_STORAGE_CLASSES": "eu-west/filesystem=ladder-cephfs-eu-west, eu-west/block=ladder-rbd-eu-west",
        "LADDER_VOLUME_CSI_CREDENTIALS": "eu-west/block=ceph-csi/csi-rbd-secret",
    }
    assert _settings(good, "s.LADDER_VOLUME_STORAGE_CLASSES").returncode == 0
    refused = _settings({**good, "LADDER_VOLUME_STORAGE_CLASSES": "eu-west/tape=ladder-tape"}, "1")
    assert refused.returncode != 0
    assert (
        "LADDER_VOLUME_STORAGE_CLASSES: 'eu-west/tape=ladder-tape': the kind is filesystem or block" in refused.stderr
    )
    refused = _settings({**good, "LADDER_VOLUME_CSI_CREDENTIALS": "eu-west/block=csi-rbd-secret"}, "1")
    assert "a Secret is named <namespace>/<name>" in refused.stderr


def test_the_serverless_autoscaler_is_hpa_unless_keda_is_named_and_a_mistake_stops_it():
    assert _settings({"SECRET_KEY": "x"}, "s.LADDER_SERVERLESS_AUTOSCALER").stdout.strip() == "hpa"
    keda = _settings({"SECRET_KEY": "x", "LADDER_SERVERLESS_AUTOSCALER": "keda"}, "s.LADDER_SERVERLESS_AUTOSCALER")
    assert keda.stdout.strip() == "keda", keda.stderr
    refused = _settings({"SECRET_KEY": "x", "LADDER_SERVERLESS_AUTOSCALER": "knative"}, "1")
    assert refused.returncode != 0
    assert "LADDER_SERVERLESS_AUTOSCALER must be hpa or keda, not 'knative'" in refused.stderr
