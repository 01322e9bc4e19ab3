"""The account's commands with the installed ``ladder`` against a live Ladder: usage, invoices, the budget, API
keys, SSH keys, secrets and volumes.

Each test signs in as its own demo user, names what it makes after itself and removes it; the budget test puts
acme's budget back as it found it.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.support.cli import LiveLadder

DEMO_SKUS = ("container/", "job/", "vm/", "bare_metal/", "serverless/")  # acme's demo allocations' rungs


def _json(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_usage_shows_this_months_rows_per_sku_and_day_and_a_total(live: LiveLadder, home: Path) -> None:
    deadline = time.monotonic() + 30
    while True:  # the demo's allocations are metered from the moment they run: give a fresh Ladder a moment
        data = _json(live.ladder("usage", "--json", home=home, user="bob"))
        if all(any(row["sku"].startswith(rung) for row in data["rows"]) for rung in DEMO_SKUS):
            break
        assert time.monotonic() < deadline, data
        time.sleep(1)
    assert data["granularity"] == "day"
    assert data["to"] is None  # this month so far
    assert {"sku", "window_start", "quantity", "unit", "amount", "currency"} <= data["rows"][0].keys()
    summed = sum(float(row["amount"]) for row in data["rows"])
    assert abs(float(data["total"]["usd"]) - summed) < 0.005

    done = live.ladder("usage", home=home, user="bob")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    for column in ("DAY", "SKU", "QUANTITY", "UNIT", "COST"):
        assert column in header
    assert any("GPU-hours" in row and "job/H100-SXM-80GB/gpu/eu-west" in row for row in rows)
    assert rows[-1].startswith("Total")
    assert rows[-1].rstrip().endswith("USD")

    hourly = live.ladder("usage", "--by", "hour", home=home, user="bob")
    assert hourly.returncode == 0, hourly.stderr
    assert hourly.stdout.startswith("HOUR")
    past = live.ladder("usage", "--month", "2001-02", home=home, user="bob")
    assert past.returncode == 0, past.stderr
    assert past.stdout == ""
    assert "No usage in 2001-02" in past.stderr
    bad = live.ladder("usage", "--month", "2026-13", home=home, user="bob")
    assert bad.returncode == 2
    assert bad.stderr.startswith("ladder: --month takes YYYY-MM")


def test_invoices_list_the_upcoming_one_and_show_its_lines(live: LiveLadder, home: Path) -> None:
    done = live.ladder("invoices", home=home, user="bob")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    for column in ("NUMBER", "PERIOD", "STATE", "TOTAL", "CURRENCY"):
        assert column in header
    assert rows[0].startswith("upcoming")
    assert "USD" in rows[0]

    data = _json(live.ladder("invoices", "list", "--json", home=home, user="bob"))
    assert data["upcoming"]["currency"] == "usd"
    assert isinstance(data["invoices"], list)

    shown = live.ladder("invoices", "show", "upcoming", home=home, user="bob")
    assert shown.returncode == 0, shown.stderr
    assert "SKU" in shown.stdout
    assert "UNIT PRICE" in shown.stdout
    assert "storage/filesystem/eu-west" in shown.stdout  # acme's datasets volume
    missing = live.ladder("invoices", "show", "1999-01", home=home, user="bob")
    assert missing.returncode == 4


def _budget_args(status: dict[str, Any]) -> list[str]:
    if status["monthly"] is None:
        return ["budget", "set", "none", "--no-hard-stop"]
    return ["budget", "set", status["monthly"], "--hard-stop" if status["hard_stop"] else "--no-hard-stop"]


def test_budget_show_set_and_remove_round_trip(live: LiveLadder, home: Path) -> None:
    before = _json(live.ladder("budget", "show", "--json", home=home, user="alice"))
    try:
        done = live.ladder("budget", "set", "100000", "--no-hard-stop", home=home, user="alice")
        assert done.returncode == 0, done.stderr
        assert "Budget set: 100000.00 USD a month, hard stop off." in done.stderr
        status = _json(live.ladder("budget", "show", "--json", home=home, user="alice"))
        assert status["monthly"] == "100000.00"
        assert status["hard_stop"] is False
        assert float(status["used_percent"]) < 1
        assert status["alerts"] == []

        shown = live.ladder("budget", home=home, user="alice")  # the bare group shows it too
        assert shown.returncode == 0, shown.stderr
        assert "100000.00 USD" in shown.stdout
        assert "Spent this month" in shown.stdout

        removed = live.ladder("budget", "set", "none", home=home, user="alice")
        assert removed.returncode == 0, removed.stderr
        assert "Budget removed" in removed.stderr
        assert _json(live.ladder("budget", "show", "--json", home=home, user="alice"))["monthly"] is None

        refused = live.ladder("budget", "set", "5000", home=home, user="bob")  # a member may not
        assert refused.returncode == 1
        assert "(permission_denied)" in refused.stderr
    finally:
        restored = live.ladder(*_budget_args(before), home=home, user="alice")
        assert restored.returncode == 0, restored.stderr
    after = _json(live.ladder("budget", "show", "--json", home=home, user="alice"))
    assert (after["monthly"], after["hard_stop"]) == (before["monthly"], before["hard_stop"])


def test_a_bad_budget_amount_is_exit_2_before_anything_is_sent(live: LiveLadder, home: Path) -> None:
    nowhere = {"LADDER_URL": "http://127.0.0.1:9", "LADDER_API_KEY": "ldr_x"}  # a request would be exit 1
    for amount in ("-5", "0", "ten", "12.345", "1e3", "NaN"):
        done = live.ladder("budget", "set", "--", amount, home=home, env=nowhere)
        assert done.returncode == 2, (amount, done.stderr)
        assert done.stderr.startswith("ladder: AMOUNT is a monthly budget above zero"), done.stderr


def test_a_created_key_is_shown_once_works_and_stops_working_when_revoked(live: LiveLadder, home: Path) -> None:
    created = live.ladder("keys", "create", "test-keys-create", "--scope", "read", home=home, user="bob")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert created.stdout == token + "\n"
    assert token.startswith("ldr_")
    assert "only time it is shown" in created.stderr
    assert token not in created.stderr
    as_key = {"LADDER_URL": live.url, "LADDER_API_KEY": token}
    assert _json(live.ladder("whoami", "--json", home=home, env=as_key))["tenant"]["slug"] == "acme"

    listed = live.ladder("keys", "list", "--json", home=home, user="bob")
    mine = [key for key in _json(listed) if key["name"] == "test-keys-create"]
    assert len(mine) == 1
    assert mine[0]["scopes"] == ["read"]
    assert mine[0]["revoked_at"] is None
    assert token not in listed.stdout
    assert token.split("_", 2)[2] not in listed.stdout  # the secret itself may hold "_"
    table = live.ladder("keys", home=home, user="bob")
    assert table.returncode == 0
    assert "test-keys-create" in table.stdout
    assert "active" in table.stdout

    unasked = live.ladder("keys", "revoke", "test-keys-create", home=home, user="bob")  # no terminal, no --yes
    assert unasked.returncode == 2
    assert "pass --yes" in unasked.stderr
    assert live.ladder("whoami", home=home, env=as_key).returncode == 0

    revoked = live.ladder("keys", "revoke", "test-keys-create", "--yes", home=home, user="bob")
    assert revoked.returncode == 0, revoked.stderr
    refused = live.ladder("whoami", home=home, env=as_key)
    assert refused.returncode == 3
    assert refused.stderr.startswith("ladder: the API key was refused")

    as_json = _json(live.ladder("keys", "create", "test-keys-json", "--json", home=home, user="bob"))
    assert as_json["token"].startswith("ldr_")
    assert sorted(as_json["scopes"]) == ["read", "write"]
    assert live.ladder("keys", "revoke", str(as_json["id"]), "--yes", home=home, user="bob").returncode == 0
    assert live.ladder("keys", "revoke", "test-keys-nothing", "--yes", home=home, user="bob").returncode == 4
    bad = live.ladder("keys", "create", "test-keys-bad", "--expires", "soon", home=home, user="bob")
    assert bad.returncode == 2
    assert bad.stderr.startswith("ladder: --expires takes an ISO date")


def _public_key(comment: str) -> tuple[str, str]:
    """A fresh ed25519 key pair in OpenSSH's formats: (public line, private PEM)."""
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    return f"{public.decode()} {comment}\n", private.decode()


def test_ssh_keys_add_from_stdin_or_a_file_and_remove(live: LiveLadder, home: Path) -> None:
    public, private = _public_key("test@ssh-keys")
    added = live.ladder("ssh-keys", "add", "test-ssh-stdin", home=home, user="bob", stdin=public)
    assert added.returncode == 0, added.stderr
    assert "SSH key test-ssh-stdin added" in added.stderr
    assert "SHA256:" in added.stderr
    mine = [k for k in _json(live.ladder("ssh-keys", "--json", home=home, user="bob")) if k["name"] == "test-ssh-stdin"]
    assert len(mine) == 1
    assert mine[0]["public_key"].startswith("ssh-ed25519 ")

    file_public, _ = _public_key("test@ssh-keys-file")
    (home / "id_test.pub").write_text(file_public)
    from_file = live.ladder("ssh-keys", "add", "test-ssh-file", "-f", "id_test.pub", home=home, user="bob")
    assert from_file.returncode == 0, from_file.stderr
    listed = live.ladder("ssh-keys", "list", home=home, user="bob")
    assert "test-ssh-stdin" in listed.stdout
    assert "test-ssh-file" in listed.stdout

    (home / "id_test").write_text(private)
    refused = live.ladder("ssh-keys", "add", "test-ssh-private", "-f", "id_test", home=home, user="bob")
    assert refused.returncode == 2
    assert "private key" in refused.stderr

    for name in ("test-ssh-stdin", "test-ssh-file"):
        removed = live.ladder("ssh-keys", "remove", name, "--yes", home=home, user="bob")
        assert removed.returncode == 0, removed.stderr
    after = live.ladder("ssh-keys", home=home, user="bob").stdout
    assert "test-ssh-stdin" not in after
    assert "test-ssh-file" not in after
    assert live.ladder("ssh-keys", "remove", "test-ssh-stdin", "--yes", home=home, user="bob").returncode == 4


def test_a_secret_is_set_from_stdin_and_its_value_never_shows(live: LiveLadder, home: Path) -> None:
    value, other = f"test-value-{secrets.token_hex(8)}", f"test-value-{secrets.token_hex(8)}"
    name = "TEST_SECRETS_STDIN"
    outputs: list[str] = []

    def run(*args: str, stdin: str | None = None) -> Any:
        done = live.ladder(*args, home=home, user="bob", stdin=stdin)
        outputs.append(done.stdout + done.stderr)
        return done

    created = run("secrets", "set", name, stdin=value + "\n")
    assert created.returncode == 0, created.stderr
    assert f"Secret {name} created (version 1)." in created.stderr
    replaced = run("secrets", "set", name, stdin=other)
    assert replaced.returncode == 0, replaced.stderr
    assert f"Secret {name} replaced (version 2)." in replaced.stderr

    listed = run("secrets", "list")
    assert listed.returncode == 0
    assert name in listed.stdout
    assert "bob" in listed.stdout
    mine = [s for s in json.loads(run("secrets", "--json").stdout) if s["name"] == name]
    assert mine == [{**mine[0], "version": 2}]
    assert "value" not in mine[0]

    on_argv = run("secrets", "set", name, value)  # a value on the command line is not taken, nor echoed
    assert on_argv.returncode == 2
    assert on_argv.stderr.startswith("ladder: a secret's value is never taken from the command line")
    empty = run("secrets", "set", name, stdin="")
    assert empty.returncode == 2
    assert "the value is empty" in empty.stderr

    unasked = run("secrets", "delete", name)
    assert unasked.returncode == 2
    deleted = run("secrets", "delete", name, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert name not in run("secrets").stdout
    assert run("secrets", "delete", name, "--yes").returncode == 4
    for text in outputs:
        assert value not in text
        assert other not in text


def test_volumes_create_list_show_grow_snapshot_and_delete(live: LiveLadder, home: Path) -> None:
    # Where acme may store data: the region of its demo volume, which its residency allowed.
    region = _json(live.ladder("volumes", "show", "datasets", "--json", home=home, user="bob"))["region"]
    name = "test-volumes-round-trip"
    created = live.ladder("volumes", "create", name, "--size", "10", "--region", region, home=home, user="bob")
    assert created.returncode == 0, created.stderr
    assert f"Volume {name}" in created.stderr
    assert f"10 GB filesystem in {region}" in created.stderr

    listed = live.ladder("volumes", home=home, user="bob")
    assert listed.returncode == 0
    row = next(line for line in listed.stdout.splitlines() if f" {name} " in line)
    assert region in row
    assert "filesystem" in row
    assert "10 GB" in row
    assert name in {v["name"] for v in _json(live.ladder("volumes", "list", "--json", home=home, user="bob"))}

    shown = live.ladder("volumes", "show", name, home=home, user="bob")
    assert shown.returncode == 0
    assert "ReadWriteMany" in shown.stdout

    grown = live.ladder("volumes", "grow", name, "--size", "20", home=home, user="bob")
    assert grown.returncode == 0, grown.stderr
    assert "from 10 GB to 20 GB" in grown.stderr
    assert _json(live.ladder("volumes", "show", name, "--json", home=home, user="bob"))["size_gb"] == 20
    shrunk = live.ladder("volumes", "grow", name, "--size", "5", home=home, user="bob")
    assert shrunk.returncode == 1
    assert shrunk.stderr.startswith("ladder: refused: size_gb:")
    assert "(validation_error)" in shrunk.stderr

    taken = live.ladder("volumes", "snapshot", name, "--name", "test-volumes-snap", home=home, user="bob")
    assert taken.returncode == 0, taken.stderr
    snapshots = _json(live.ladder("volumes", "snapshots", name, "--json", home=home, user="bob"))
    assert [s["name"] for s in snapshots] == ["test-volumes-snap"]
    assert snapshots[0]["size_gb"] == 20
    assert "test-volumes-snap" in live.ladder("volumes", "snapshots", name, home=home, user="bob").stdout

    unasked = live.ladder("volumes", "delete", name, home=home, user="bob")
    assert unasked.returncode == 2
    assert "pass --yes" in unasked.stderr
    deleted = live.ladder("volumes", "delete", name, "--yes", home=home, user="bob")
    assert deleted.returncode == 0, deleted.stderr
    after = _json(live.ladder("volumes", "show", name, "--json", home=home, user="bob"))
    assert after["state"] in ("deleting", "deleted")
    assert live.ladder("volumes", "show", "test-volumes-none", home=home, user="bob").returncode == 4
