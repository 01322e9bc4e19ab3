"""Offline verification of a signed finance export: ``python -m compliance.domain.verify_export FILE [--signature SIG]
--public-key KEYFILE``.

Like ``compliance.domain.verify`` it imports only the standard library, ``cryptography`` and ``core.domain.chain``:
a recipient
runs it with the export, its signature file (``FILE.sig.json`` beside it by default) and the public key from
``GET /api/v1/compliance/audit-key`` (its JSON answer or the PEM inside it), without Ladder.

The signature file is one JSON object:

``{"format": "ladder-export-signature", "version": 1, "file": NAME, "file_format": "csv"|"parquet",
"sha256": HEX, "bytes": N, "rows": N, "from": "YYYY-MM-DD", "to": "YYYY-MM-DD" (inclusive), "tenant": SLUG|null,
"detail": BOOL, "focus_version": "1.2", "signed_at": ISO, "key_id": HEX16, "public_key": PEM, "signature": B64}``

``signature`` is Ed25519 over ``export_payload``: the canonical JSON (sorted keys, no whitespace) of every other
field under the key ``"ladder-export"``, so neither an audit checkpoint's nor a bundle seal's signature passes for
it. Checks: the key given is the one that signed (key id), the signature, the file's size and SHA-256, and for a
CSV its row count. Exit 0 with a summary line, 1 naming what failed, 2 when a file or the key cannot be read.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from compliance.domain.verify import key_id, load_public_key, signature_valid
from core.domain.chain import canonical_json

SIGNATURE_FORMAT = "ladder-export-signature"
SIGNATURE_VERSION = 1
SIGNED_FIELDS = (
    "format",
    "version",
    "file",
    "file_format",
    "sha256",
    "bytes",
    "rows",
    "from",
    "to",
    "tenant",
    "detail",
    "focus_version",
    "signed_at",
    "key_id",
)


class ExportInvalid(Exception):
    """The export does not match its signature: ``kind`` names why (signature, digest, size, rows, key)."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind, self.detail = kind, detail
        super().__init__(f"export verification failed: {kind}: {detail}")


def export_payload(fields: dict[str, Any]) -> bytes:
    """What an export's signature covers."""
    return canonical_json({"ladder-export": {k: fields[k] for k in SIGNED_FIELDS}}).encode("utf-8")


def file_digest(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def csv_rows(path: Path) -> int:
    with path.open(newline="", encoding="utf-8") as handle:
        return max(sum(1 for _ in csv.reader(handle)) - 1, 0)


def verify_export(path: Path, signature: dict[str, Any], public_key: Ed25519PublicKey) -> str:
    """Raise ``ExportInvalid`` naming the first failed check; return a summary line."""
    if signature.get("format") != SIGNATURE_FORMAT or signature.get("version") != SIGNATURE_VERSION:
        raise ExportInvalid("format", f"not a {SIGNATURE_FORMAT} version {SIGNATURE_VERSION} file")
    missing = [k for k in (*SIGNED_FIELDS, "signature") if k not in signature]
    if missing:
        raise ExportInvalid("format", f"the signature file lacks {', '.join(missing)}")
    if signature["key_id"] != key_id(public_key):
        raise ExportInvalid(
            "key", f"signed with key {signature['key_id']}, not with the key given ({key_id(public_key)})"
        )
    if not signature_valid(public_key, signature["signature"], export_payload(signature)):
        raise ExportInvalid("signature", "the Ed25519 signature does not match the signed fields")
    sha256, size = file_digest(path)
    if size != signature["bytes"]:
        raise ExportInvalid("size", f"the file has {size} bytes, the signature says {signature['bytes']}")
    if sha256 != signature["sha256"]:
        raise ExportInvalid("digest", f"the file's SHA-256 is {sha256}, the signature says {signature['sha256']}")
    if signature["file_format"] == "csv":
        rows = csv_rows(path)
        if rows != signature["rows"]:
            raise ExportInvalid("rows", f"the file has {rows} rows, the signature says {signature['rows']}")
    scope = signature["tenant"] or "all tenants"
    kind = "detail" if signature["detail"] else "summary"
    return (
        f"OK: {path.name}: {signature['rows']} rows, {kind} export of {scope} from {signature['from']} to "
        f"{signature['to']} (inclusive), sha256 {sha256}, signed by key {signature['key_id']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compliance.domain.verify_export", description=__doc__.split("\n")[0]
    )
    parser.add_argument("file", type=Path, help="the export (CSV or Parquet)")
    parser.add_argument("--signature", type=Path, help="its signature file (default: FILE.sig.json)")
    parser.add_argument(
        "--public-key", type=Path, required=True, help="PEM, or the JSON of GET /api/v1/compliance/audit-key"
    )
    args = parser.parse_args(argv)
    signature_path = args.signature or args.file.with_name(args.file.name + ".sig.json")
    try:
        public_key = load_public_key(args.public_key.read_bytes())
    except (OSError, ValueError, KeyError) as error:
        print(f"cannot read the public key {args.public_key}: {error}", file=sys.stderr)
        return 2
    try:
        signature = json.loads(signature_path.read_text(encoding="utf-8"))
        if not isinstance(signature, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as error:
        print(f"cannot read the signature {signature_path}: {error}", file=sys.stderr)
        return 2
    if not args.file.is_file():
        print(f"cannot read the export {args.file}", file=sys.stderr)
        return 2
    try:
        print(verify_export(args.file, signature, public_key))
    except ExportInvalid as error:
        print(str(error), file=sys.stderr)
        return 1
    except (UnicodeDecodeError, csv.Error) as error:
        print(f"export verification failed: rows: the CSV cannot be read: {error}", file=sys.stderr)
        return 1
    return 0


def signature_header(signature: dict[str, Any]) -> str:
    """The signature as one header value: its canonical JSON, base64url (for the API's streamed exports)."""
    return base64.urlsafe_b64encode(canonical_json(signature).encode()).decode("ascii")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
