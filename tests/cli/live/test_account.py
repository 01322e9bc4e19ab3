"""Signing in and the first look around, with the installed ``ladder`` against a live Ladder."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.support.cli import LiveLadder


def test_login_checks_the_key_and_stores_it_for_the_owner_only(live: LiveLadder, home: Path) -> None:
    key = live.key("alice")
    done = live.ladder("login", "--url", live.url, home=home, stdin=key + "\n")
    assert done.returncode == 0, done.stderr
    assert "Acme Robotics (acme)" in done.stderr
    assert key not in done.stdout + done.stderr  # only the key's public prefix is ever shown
    stored = home / ".config" / "ladder" / "config.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text()) == {"url": live.url, "api_key": key}

    who = live.ladder("whoami", "--json", home=home)
    assert who.returncode == 0, who.stderr
    assert json.loads(who.stdout)["tenant"]["slug"] == "acme"

    assert live.ladder("logout", home=home).returncode == 0
    assert not stored.exists()
    after = live.ladder("whoami", home=home)
    assert after.returncode == 3
    assert after.stderr.startswith("ladder: not signed in")


def test_a_refused_key_is_exit_3_and_nothing_is_stored(live: LiveLadder, home: Path) -> None:
    done = live.ladder("login", "--url", live.url, home=home, stdin="ldr_000000000000_not-a-key\n")
    assert done.returncode == 3
    assert done.stderr.startswith("ladder: the API key was refused")
    assert "(not_authenticated)" in done.stderr or "(authentication_failed)" in done.stderr
    assert not (home / ".config" / "ladder" / "config.json").exists()


def test_the_environment_overrides_the_stored_login(live: LiveLadder, home: Path) -> None:
    assert live.ladder("login", "--url", live.url, home=home, stdin=live.key("alice") + "\n").returncode == 0
    who = live.ladder("whoami", "--json", home=home, user="charlie")
    assert json.loads(who.stdout)["tenant"]["slug"] == "globex"


def test_offerings_show_free_capacity_price_and_both_promises(live: LiveLadder, home: Path) -> None:
    done = live.ladder("offerings", "--rung", "container", home=home, user="alice")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    for column in ("RUNG", "GPU MODEL", "REGION", "FREE", "PRICE/HOUR", "PERFORMANCE ISOLATION", "SECURITY"):
        assert column in header
    assert rows
    assert all(row.startswith("container") for row in rows)
    assert any("H100-SXM-80GB" in row and "/GPU" in row for row in rows)

    public = live.ladder("offerings", "--json", home=home, env={"LADDER_URL": live.url})  # no key needed
    data = json.loads(public.stdout)
    assert {row["rung"] for row in data} >= {"container", "job", "serverless", "vm"}
    assert all({"available", "prices", "security_isolation", "performance_isolation"} <= row.keys() for row in data)


def test_an_unreachable_ladder_is_one_line_and_exit_1(live: LiveLadder, home: Path) -> None:
    done = live.ladder("whoami", home=home, env={"LADDER_URL": "http://127.0.0.1:9", "LADDER_API_KEY": "ldr_x"})
    assert done.returncode == 1
    assert done.stderr.startswith("ladder: cannot reach Ladder at http://127.0.0.1:9")
    assert len(done.stderr.strip().splitlines()) == 1
