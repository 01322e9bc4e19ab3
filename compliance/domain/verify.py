"""Offline verification of an audit bundle: ``python -m compliance.domain.verify FILE --public-key KEYFILE``.

This module imports only the standard library, ``cryptography`` and ``core.domain.chain``: an auditor runs it on a
bundle written by ``manage.py audit_export`` without Ladder's database, settings or Django. It also defines the
two signed payloads (checkpoint and seal), so the signer (``compliance.signing``) and this verifier share one
spelling of them.

A bundle is JSON lines, in this order:

- a header: ``{"format": "ladder-audit-bundle", "version": 1, "key_id", "public_key", "exported_at", "filter"}``;
- records in seq order, contiguous: ``{"type": "event", <every field of chain.HASHED_FIELDS>, "hash"}`` for the
  events selected, and ``{"type": "link", "seq", "prev_hash", "hash"}`` for each event between them (and up to the
  covering checkpoint) that the selection leaves out: another tenant's, or outside the time window;
- ``{"type": "checkpoint", "seq", "hash", "at", "key_id", "signature"}`` right after the record at its seq: the
  chain head at that seq, signed with Ed25519 when it was taken. The last record always carries one;
- ``{"type": "seal", "events", "links", "checkpoints", "sha256", "key_id", "signature"}``: SHA-256 of every byte
  before it, signed at export.

Why the seal: a link record's hash cannot be recomputed without the event's content, which the bundle leaves out,
so without the seal a forger could change an event, re-hash it and point the next link record at the new hash.
The seal makes every byte, link records and header included, the exporter's (who verified those events against
their content in the database before writing them).

Checks, streaming (memory does not grow with the bundle): every event's hash recomputes from its content; each
record's ``prev_hash`` is the previous record's ``hash`` and seqs are contiguous; each checkpoint is signed by a
given key and matches the record it follows; every event is covered by a later checkpoint; the seal's digest,
counts and signature. Exit 0 with a summary line, 1 naming the first problem (and its seq), 2 when the input or
a key cannot be read.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from core.domain.chain import GENESIS_HASH, HASHED_FIELDS, canonical_json, event_hash

BUNDLE_FORMAT = "ladder-audit-bundle"
BUNDLE_VERSION = 1

TAMPERED = "tampered body"
BROKEN_LINK = "broken link"
BAD_SIGNATURE = "bad signature"
UNCOVERED = "uncovered"


# --- the event encoding, fast ----------------------------------------------------------------------------------

# canonical_event spells the keys in this order, the sorted order canonical_json uses; refuse to run if the chain's
# fields ever change without it.
_ENCODED_ORDER = (
    "action",
    "actor_id",
    "actor_label",
    "actor_type",
    "api_key_prefix",
    "at",
    "data",
    "prev_hash",
    "seq",
    "target_id",
    "target_type",
    "tenant_id",
)
if tuple(sorted(HASHED_FIELDS)) != _ENCODED_ORDER:
    raise ImportError("compliance.domain.verify's event encoding no longer matches core.domain.chain.HASHED_FIELDS")

_quote: Callable[[str], str] = json.encoder.encode_basestring  # the C function json.dumps uses for str
_dump = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def canonical_event(
    seq: int,
    at: str,
    actor_type: str,
    actor_id: str,
    actor_label: str,
    api_key_prefix: str,
    tenant_id: int | None,
    action: str,
    target_type: str,
    target_id: str,
    data: Any,
    prev_hash: str,
) -> str:
    """``chain.canonical_json`` of an event's hashed fields (arguments in HASHED_FIELDS order; ``at`` already
    spelled by ``chain.format_time``), built with one template instead of a dict, a walk for floats and a fresh
    encoder per event: several times faster. It does not refuse floats; a float in ``data`` is spelled, and the hash
    then differs from the stored one, which no float ever entered. Callers treat a mismatch as a question for
    ``chain.event_hash``, the authority, so this can only ever be a shortcut to the same answer."""
    return (
        f'{{"action":{_quote(action)},"actor_id":{_quote(actor_id)},"actor_label":{_quote(actor_label)},'
        f'"actor_type":{_quote(actor_type)},"api_key_prefix":{_quote(api_key_prefix)},"at":{_quote(at)},'
        f'"data":{_dump(data)},"prev_hash":{_quote(prev_hash)},"seq":{seq:d},"target_id":{_quote(target_id)},'
        f'"target_type":{_quote(target_type)},"tenant_id":{"null" if tenant_id is None else f"{tenant_id:d}"}}}'
    )


def _record_hash(record: dict[str, Any]) -> str | None:
    """The hash of a bundle's event record: the fast encoding, and chain.event_hash when that disagrees."""
    try:
        fast = canonical_event(*[record[name] for name in HASHED_FIELDS])
        if hashlib.sha256(fast.encode("utf-8")).hexdigest() == record["hash"]:
            return str(record["hash"])
    except (KeyError, TypeError, ValueError):
        pass
    try:
        fields = {name: record[name] for name in HASHED_FIELDS}
        fields["at"] = datetime.fromisoformat(fields["at"])
        return event_hash(fields)
    except (KeyError, TypeError, ValueError):
        return None


# --- the signed payloads -----------------------------------------------------------------------------------------


def key_id(public_key: Ed25519PublicKey) -> str:
    """First 16 hex digits of SHA-256 over the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def checkpoint_payload(*, seq: int, hash_: str, at: str, key_id: str) -> bytes:
    """What a checkpoint's signature covers: canonical JSON of the chain head, the time (chain.format_time) and key."""
    return canonical_json({"seq": seq, "hash": hash_, "at": at, "key_id": key_id}).encode("utf-8")


def seal_payload(*, sha256: str, events: int, links: int, checkpoints: int, key_id: str) -> bytes:
    """What a bundle's seal signs; its keys differ from a checkpoint's, so neither signature passes for the other."""
    counts = {"events": events, "links": links, "checkpoints": checkpoints}
    return canonical_json({"bundle_sha256": sha256, **counts, "key_id": key_id}).encode("utf-8")


def signature_valid(public_key: Ed25519PublicKey, signature: Any, payload: bytes) -> bool:
    if not isinstance(signature, str):
        return False
    try:
        public_key.verify(base64.b64decode(signature, validate=True), payload)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def load_public_key(data: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM, or from the JSON ``GET /api/v1/compliance/audit-key`` answers."""
    text = data.strip()
    if text.startswith(b"{"):
        text = str(json.loads(text)["public_key"]).encode()
    key = serialization.load_pem_public_key(text)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key


# --- verification ------------------------------------------------------------------------------------------------


class BundleError(Exception):
    """The bundle fails verification; ``seq`` names the first bad record when there is one."""

    def __init__(self, kind: str, detail: str, seq: int | None = None) -> None:
        self.kind, self.detail, self.seq = kind, detail, seq
        where = f" at seq {seq}" if seq is not None else ""
        super().__init__(f"bundle verification failed{where}: {kind}: {detail}")


class BundleUnreadable(Exception):
    """The input is not a bundle (or not readable at all): exit 2."""


@dataclass
class Summary:
    events: int = 0
    links: int = 0
    checkpoints: int = 0
    key_id: str = ""

    def describe(self) -> str:
        return f"{self.events} events, {self.links} links, {self.checkpoints} checkpoints verified, key {self.key_id}"


class BundleVerifier:
    """Feed it a bundle's lines (bytes, newline included) in order, then call ``finish()``."""

    def __init__(self, public_keys: Sequence[Ed25519PublicKey]) -> None:
        if not public_keys:
            raise ValueError("at least one public key is needed")
        self.keys = {key_id(k): k for k in public_keys}
        self.summary = Summary(key_id=", ".join(self.keys))
        self.digest = hashlib.sha256()
        self.line = 0
        self.header: dict[str, Any] | None = None
        self.sealed = False
        self.prev: tuple[int, str] | None = None  # (seq, hash) of the last record
        self.last_checkpoint: int | None = None
        self.first_uncovered: int | None = None  # the first event not yet followed by a checkpoint

    def feed(self, raw: bytes) -> None:
        self.line += 1
        try:
            record = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as error:
            raise BundleUnreadable(f"line {self.line} is not JSON: {error}") from None
        if not isinstance(record, dict):
            raise BundleUnreadable(f"line {self.line} is not a JSON object")
        if self.header is None:
            if record.get("format") != BUNDLE_FORMAT or record.get("version") != BUNDLE_VERSION:
                raise BundleUnreadable(f"not a {BUNDLE_FORMAT} version {BUNDLE_VERSION} (first line)")
            self.header = record
        elif self.sealed:
            raise BundleError(UNCOVERED, f"line {self.line} follows the seal: nothing may be added after it")
        else:
            kind = record.get("type")
            if kind == "event":
                self._event(record)
            elif kind == "link":
                self._record(record)
                self.summary.links += 1
            elif kind == "checkpoint":
                self._checkpoint(record)
            elif kind == "seal":
                self._seal(record)
                return  # the seal is not part of its own digest
            else:
                raise BundleError(TAMPERED, f"line {self.line} is no record this format knows ({kind!r})")
        self.digest.update(raw)

    def _record(self, record: dict[str, Any]) -> int:
        """The link to the previous record: seqs contiguous, ``prev_hash`` equal to the previous record's hash."""
        seq, prev_hash, hash_ = record.get("seq"), record.get("prev_hash"), record.get("hash")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise BundleError(TAMPERED, f"line {self.line}: a record without a seq")
        if not (isinstance(prev_hash, str) and isinstance(hash_, str)):
            raise BundleError(TAMPERED, "the record lacks its prev_hash or hash", seq)
        if self.prev is None:
            if seq == 1 and prev_hash != GENESIS_HASH:
                raise BundleError(BROKEN_LINK, "the first event's prev_hash is not the genesis hash", seq)
        else:
            prev_seq, expected = self.prev
            if seq != prev_seq + 1:
                raise BundleError(
                    BROKEN_LINK,
                    f"seq {seq} follows seq {prev_seq}: an event was removed, added or moved",
                    prev_seq + 1,
                )
            if prev_hash != expected:
                raise BundleError(BROKEN_LINK, f"prev_hash does not match the hash of seq {prev_seq}", seq)
        self.prev = (seq, hash_)
        return seq

    def _event(self, record: dict[str, Any]) -> None:
        seq = self._record(record)
        if _record_hash(record) != record["hash"]:
            raise BundleError(TAMPERED, "the event's content does not match its hash", seq)
        self.summary.events += 1
        if self.first_uncovered is None:
            self.first_uncovered = seq

    def _key(self, record: dict[str, Any], seq: int | None, what: str) -> Ed25519PublicKey:
        signer = record.get("key_id")
        key = self.keys.get(signer) if isinstance(signer, str) else None
        if key is None:
            given = ", ".join(self.keys)
            raise BundleError(BAD_SIGNATURE, f"{what} is signed by key {signer}, not by {given}", seq)
        return key

    def _checkpoint(self, record: dict[str, Any]) -> None:
        seq, hash_, at = record.get("seq"), record.get("hash"), record.get("at")
        if isinstance(seq, bool) or not (isinstance(seq, int) and isinstance(hash_, str) and isinstance(at, str)):
            raise BundleError(TAMPERED, f"line {self.line}: a checkpoint lacks its seq, hash or time")
        key = self._key(record, seq, "the checkpoint")
        payload = checkpoint_payload(seq=seq, hash_=hash_, at=at, key_id=str(record["key_id"]))
        if not signature_valid(key, record.get("signature"), payload):
            raise BundleError(BAD_SIGNATURE, "the checkpoint's signature does not verify", seq)
        if self.prev is None or self.prev[0] != seq:
            where = f"after seq {self.prev[0]}" if self.prev else "before any record"
            raise BundleError(BROKEN_LINK, f"the signed checkpoint of seq {seq} stands {where}", seq)
        if self.prev[1] != hash_:
            raise BundleError(BROKEN_LINK, "the record's hash is not the one its signed checkpoint vouches for", seq)
        self.summary.checkpoints += 1
        self.last_checkpoint = seq
        self.first_uncovered = None

    def _seal(self, record: dict[str, Any]) -> None:
        self._covered()
        key = self._key(record, None, "the bundle's seal")
        digest = self.digest.hexdigest()
        if record.get("sha256") != digest:
            raise BundleError(TAMPERED, "the bundle's bytes are not the ones sealed at export (a line was changed)")
        counts = (self.summary.events, self.summary.links, self.summary.checkpoints)
        if (record.get("events"), record.get("links"), record.get("checkpoints")) != counts:
            raise BundleError(TAMPERED, f"the seal counts other records than the bundle holds {counts}")
        payload = seal_payload(
            sha256=digest, events=counts[0], links=counts[1], checkpoints=counts[2], key_id=str(record["key_id"])
        )
        if not signature_valid(key, record.get("signature"), payload):
            raise BundleError(BAD_SIGNATURE, "the bundle's seal does not verify")
        self.sealed = True

    def _covered(self) -> None:
        if self.first_uncovered is not None:
            raise BundleError(UNCOVERED, "no signed checkpoint at or after this event", self.first_uncovered)

    def finish(self) -> Summary:
        if self.header is None:
            raise BundleUnreadable("the input is empty")
        self._covered()
        if not self.sealed:
            raise BundleError(UNCOVERED, "the bundle ends without its seal (cut short?)")
        return self.summary


def verify_bundle(lines: Iterable[bytes], public_keys: Sequence[Ed25519PublicKey]) -> Summary:
    verifier = BundleVerifier(public_keys)
    for raw in lines:
        verifier.feed(raw)
    return verifier.finish()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compliance.domain.verify", description="Verify a Ladder audit bundle offline."
    )
    parser.add_argument("bundle", help="the bundle written by manage.py audit_export ('-' reads standard input)")
    parser.add_argument(
        "--public-key",
        action="append",
        required=True,
        metavar="KEYFILE",
        help="the audit signing key's public key (PEM, or GET /api/v1/compliance/audit-key's JSON); "
        "repeat it for checkpoints signed before a key rotation",
    )
    args = parser.parse_args(argv)
    try:
        keys = [load_public_key(Path(name).read_bytes()) for name in args.public_key]
    except (OSError, ValueError, KeyError) as error:
        print(f"cannot read the public key: {error}", file=sys.stderr)
        return 2
    try:
        if args.bundle == "-":
            summary = verify_bundle(sys.stdin.buffer, keys)
        else:
            with open(args.bundle, "rb") as lines:
                summary = verify_bundle(lines, keys)
    except (OSError, BundleUnreadable) as error:
        print(f"cannot read the bundle: {error}", file=sys.stderr)
        return 2
    except BundleError as error:
        print(error, file=sys.stderr)
        return 1
    print(summary.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
