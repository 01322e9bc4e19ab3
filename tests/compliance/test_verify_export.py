"""Signed finance exports, checked offline (python -m compliance.domain.verify_export) with only the file, its signature
and the public key the API publishes: a true export passes; a changed byte, a changed claim, another key, a
truncated file fail, each naming why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import call_command

from compliance.domain.verify_export import main
from compliance.signing import Signer
from tests.support import ROOT
from tests.support.exports import generated_month


@pytest.fixture
def signed(acme, client, tmp_path):
    generated_month([acme], days=1)
    key = tmp_path / "audit-key.json"
    key.write_text(json.dumps(client.get("/api/v1/compliance/audit-key").json()))
    paths = {}
    for file_format in ("csv", "parquet"):
        path = tmp_path / f"export.{file_format}"
        call_command(
            "billing_export", "--from", "2026-10-01", "--to", "2026-10-01", "--detail", "--format", file_format,
            "--out", str(path),
        )  # fmt: skip
        paths[file_format] = path
    return paths, key


def verify(path, key, capsys, *extra: str) -> tuple[int, str]:
    code = main([str(path), "--public-key", str(key), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_a_true_export_verifies(signed, capsys, file_format):
    paths, key = signed
    code, said = verify(paths[file_format], key, capsys)
    assert code == 0, said
    assert said.startswith(f"OK: export.{file_format}: ")
    signature = json.loads(paths[file_format].with_name(f"export.{file_format}.sig.json").read_text())
    assert signature["format"] == "ladder-export-signature"
    assert (signature["from"], signature["to"], signature["tenant"], signature["detail"]) == (
        "2026-10-01",
        "2026-10-01",
        None,
        True,
    )
    assert signature["rows"] > 0
    assert f"{signature['rows']} rows" in said


def test_a_changed_byte_fails_naming_the_digest(signed, capsys):
    paths, key = signed
    data = bytearray(paths["csv"].read_bytes())
    at = data.index(b"\n") + 1  # the first digit of the first row's cost: same size, another amount
    data[at] = ord("3") if data[at] != ord("3") else ord("4")
    paths["csv"].write_bytes(bytes(data))
    code, said = verify(paths["csv"], key, capsys)
    assert code == 1
    assert "digest" in said


def test_a_truncated_file_fails_naming_its_size(signed, capsys):
    paths, key = signed
    paths["parquet"].write_bytes(paths["parquet"].read_bytes()[:-10])
    code, said = verify(paths["parquet"], key, capsys)
    assert code == 1
    assert "size" in said


def test_a_changed_claim_fails_the_signature(signed, capsys):
    paths, key = signed
    signature_path = paths["csv"].with_name("export.csv.sig.json")
    signature = json.loads(signature_path.read_text())
    signature["tenant"] = "globex"  # claim it is another tenant's export
    signature_path.write_text(json.dumps(signature))
    code, said = verify(paths["csv"], key, capsys)
    assert code == 1
    assert "signature" in said


def test_another_key_fails_and_a_missing_key_file_is_exit_2(signed, capsys, tmp_path):
    paths, _ = signed
    other = tmp_path / "other.pem"
    other.write_text(Signer.of(Ed25519PrivateKey.generate()).public_key_pem)
    code, said = verify(paths["csv"], other, capsys)
    assert code == 1
    assert "key" in said
    code, said = verify(paths["csv"], tmp_path / "nowhere.pem", capsys)
    assert code == 2


def test_the_checker_runs_without_django(signed):
    """A recipient has no Ladder settings: the module runs with the file, the signature and the key only."""
    paths, key = signed
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-m", "compliance.domain.verify_export", str(paths["parquet"]), "--public-key", str(key)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timedelta(minutes=1).total_seconds(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "OK: export.parquet" in result.stdout
