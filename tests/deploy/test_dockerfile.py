"""The Dockerfile's rules, read from the file (no Docker engine here): a build stage that installs the lock with its
hashes and then the project without dependencies and collects the static files; a slim runtime stage that runs as
a numeric non-root user, keeps no secret in its environment, writes only to /tmp and the data volume, checks its
health, and starts gunicorn with the project's configuration file."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

import pytest

from tests.deploy.test_manifests import SECRET_LOOKS, SECRET_NAMES
from tests.support import ROOT

DOCKERFILE = ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    value: str


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, continued lines joined."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, value = pending.strip().partition(" ")
        found.append(Instruction(keyword.upper(), " ".join(value.split())))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def stages(text: str) -> dict[str, list[Instruction]]:
    """Each stage's instructions by the stage's name (``FROM image AS name``)."""
    out: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for instruction in instructions(text):
        if instruction.keyword == "FROM":
            name = re.search(r"\bAS\s+(\S+)$", instruction.value, flags=re.IGNORECASE)
            assert name, f"unnamed stage: FROM {instruction.value}"
            current = out.setdefault(name.group(1), [])
        elif current is not None:
            current.append(instruction)
    return out


def env_of(stage: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in stage:
        if instruction.keyword == "ENV":
            for pair in shlex.split(instruction.value):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


@pytest.fixture(scope="module")
def dockerfile() -> dict[str, list[Instruction]]:
    return stages(DOCKERFILE.read_text())


def runs(stage: list[Instruction]) -> list[str]:
    return [i.value for i in stage if i.keyword == "RUN"]


def test_the_parser_reads_continued_lines_and_skips_comments():
    text = 'FROM a AS b\n# note\nRUN one \\\n    two \\\n    # inside\n    three\nENV A=1 \\\n    B="x y"\n'
    (stage,) = stages(text).values()
    assert stage == [Instruction("RUN", "one two three"), Instruction("ENV", 'A=1 B="x y"')]
    assert env_of(stage) == {"A": "1", "B": "x y"}


def test_two_stages_build_and_a_slim_runtime(dockerfile):
    assert list(dockerfile) == ["build", "runtime"]
    text = DOCKERFILE.read_text()
    (base,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", text, flags=re.MULTILINE)
    assert base.startswith("python:3.11")
    assert base.endswith("-slim-bookworm")
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\} AS runtime$", text, flags=re.MULTILINE)
    copied = [i.value for i in dockerfile["runtime"] if i.keyword == "COPY"]
    assert copied == ["--from=build /opt/venv /opt/venv", "--from=build /app /app"]


def test_the_build_installs_the_lock_with_hashes_then_the_project_without_dependencies(dockerfile):
    steps = runs(dockerfile["build"])
    (lock,) = [i for i, step in enumerate(steps) if "requirements.lock" in step]
    assert "pip install --require-hashes -r /tmp/requirements.lock" in steps[lock]
    (project,) = [i for i, step in enumerate(steps) if "--no-deps" in step]
    assert project > lock
    assert "pip install --no-deps --no-build-isolation -e /app" in steps[project]
    # Only what the lock pins: no other pip install, no package named on a command line.
    assert sum(step.count("pip install") for step in steps) == 2
    assert (ROOT / "requirements.lock").read_text().count("--hash=sha256:") > 100


def test_the_static_files_are_collected_at_build_time(dockerfile):
    (step,) = [s for s in runs(dockerfile["build"]) if "collectstatic" in s]
    assert "manage.py collectstatic --noinput" in step
    # Without a secret: DEBUG=1 for that one command (settings.py refuses to start without SECRET_KEY otherwise).
    assert "DEBUG=1 " in step
    assert "SECRET_KEY" not in step


def test_the_runtime_runs_as_a_numeric_non_root_user(dockerfile):
    users = [i.value for i in dockerfile["runtime"] if i.keyword == "USER"]
    assert users == ["10001:10001"]
    keywords = [i.keyword for i in dockerfile["runtime"]]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k in ("RUN", "COPY"))


def test_no_secret_in_the_image_environment(dockerfile):
    for stage in dockerfile.values():
        env = env_of(stage)
        assert not SECRET_NAMES & set(env)
        assert not [k for k in env if re.search(r"SECRET|PASSWORD|TOKEN|_KEY", k)]
        assert not SECRET_LOOKS.search(" ".join(env.values()))
    args = [i.value for stage in dockerfile.values() for i in stage if i.keyword == "ARG"]
    assert not [a for a in args if re.search(r"SECRET|PASSWORD|TOKEN|KEY", a)]


def test_writable_places_are_tmp_and_the_data_volume(dockerfile):
    env = env_of(dockerfile["runtime"])
    assert env["PROMETHEUS_MULTIPROC_DIR"] == "/tmp/metrics"  # noqa: S108 - inside the image
    assert env["LADDER_EXPORT_DIR"] == "/var/lib/ladder/exports"
    assert env["LADDER_STORAGE_URL"] == "file:///var/lib/ladder/storage/{region}"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # the source is read-only at run time; compiled at build time
    assert env["DJANGO_SETTINGS_MODULE"] == "config.settings"
    # gunicorn's control socket goes to XDG_RUNTIME_DIR, else under $HOME, which the image's user does not have.
    assert env["XDG_RUNTIME_DIR"] == "/tmp"  # noqa: S108 - inside the image
    (made,) = [s for s in runs(dockerfile["runtime"]) if "install -d" in s]
    assert "-o 10001 -g 10001 /var/lib/ladder /var/lib/ladder/exports /var/lib/ladder/storage /tmp/metrics" in made


def test_it_checks_its_health_and_starts_gunicorn_with_the_projects_configuration(dockerfile):
    (check,) = [i.value for i in dockerfile["runtime"] if i.keyword == "HEALTHCHECK"]
    assert "http://127.0.0.1:8000/healthz" in check
    (cmd,) = [i.value for i in dockerfile["runtime"] if i.keyword == "CMD"]
    assert json.loads(cmd) == ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi:application"]
    assert [i.value for i in dockerfile["runtime"] if i.keyword == "EXPOSE"] == ["8000"]


def test_the_build_context_leaves_out_local_state_and_secrets():
    ignored = {
        line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")
    }
    assert {".git", ".venv", "var", "db.sqlite3", "staticfiles", ".env", "*.env"} <= ignored
    # What the build reads is not left out.
    assert not {"requirements.lock", "pyproject.toml", "manage.py", "README.md", "config", "portal"} & ignored
