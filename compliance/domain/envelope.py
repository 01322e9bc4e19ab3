"""Envelope encryption for tenant assets, free of Django so the ORM layer only stores what it returns.

Three layers of 256-bit AES-GCM keys: a *master key* (from settings or a file, held in a ``MasterKeyRing``) wraps
each *tenant key*; a tenant key wraps each asset's *data key*; a data key encrypts that asset's content. Every
wrapped key is bound to its owner through the associated data (``"tenant:42"``, ``"asset:7"``), so a blob copied
onto another row does not open. Master-key rotation re-wraps only the small tenant-key records
(``rewrap_tenant_key``); data keys and content are never touched.

Crypto-shredding is deleting the wrapped data key (one asset) or the wrapped tenant key (account closure, which
takes every data key under it along): without it no key in the ring opens anything below it. The waiting period
and its cancellation belong to the service layer, which keeps the wrapped key until the deadline. Backups that
hold wrapped keys delay the shredding until they expire.

Formats (all integers big-endian):

- wrapped key: ``0x01 | nonce (12) | AES-GCM(key) (32 + 16 tag)``, 61 bytes; AAD ``0x01 | context``.
- content: ``0x02 | nonce (12) | AES-GCM(content) (len + 16 tag)``; AAD ``0x02 | "asset:<id>"``.
- stream: header ``0x03 | nonce prefix (8) | chunk size (4)``, then frames. Every frame but the last seals exactly
  ``chunk size`` plaintext bytes (``chunk size + 16`` on disk); the last seals fewer (possibly zero), so the
  frame boundaries follow from the header alone. Frame *i* uses nonce ``prefix | i (4)`` and AAD
  ``header | final flag (0x00 or 0x01) | "asset:<id>"``: reordering changes the nonce, dropping the final frame
  leaves no frame marked final, and cutting one short breaks its tag.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
DEFAULT_CHUNK_SIZE = 1024 * 1024
MAX_CHUNK_SIZE = 64 * 1024 * 1024  # a forged header must not make the reader buffer gigabytes before failing

_KEY_V1 = b"\x01"
_CONTENT_V1 = b"\x02"
_STREAM_V1 = b"\x03"
_WRAPPED_LEN = 1 + NONCE_BYTES + KEY_BYTES + TAG_BYTES
_PREFIX_BYTES = 8
_HEADER_LEN = 1 + _PREFIX_BYTES + 4
_MAX_CHUNKS = 2**32  # the counter is four bytes; past it nonces would repeat
_KEY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_KEY_ID_RULE = "1-64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"

Owner = int | str


class EnvelopeError(Exception):
    """Something could not be decrypted. Messages name owners and key ids, never key material."""


class KeyUnavailable(EnvelopeError):
    """A wrapped key did not open: its master is gone, it belongs to another owner, or it was altered."""


class ContentInvalid(EnvelopeError):
    """Content did not authenticate: wrong data key or asset, altered, truncated or reordered."""


def fingerprint(key: bytes) -> str:
    """A short, stable name for a key in logs: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:16]


def _check_key(key: bytes, what: str) -> None:
    if len(key) != KEY_BYTES:
        raise ValueError(f"{what} must be {KEY_BYTES} bytes, not {len(key)}")


@dataclass(frozen=True)
class MasterKeyRing:
    """Master keys by id; ``current_id`` wraps new and re-wrapped tenant keys, the others only unwrap."""

    keys: Mapping[str, bytes] = field(repr=False)
    current_id: str

    def __post_init__(self) -> None:
        if self.current_id not in self.keys:
            raise ValueError(f"current master key id {self.current_id!r} is not in the ring")
        # Frozen all the way down: a ring shared between requests must not change under one of them.
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))
        for key_id, key in self.keys.items():
            # An invalid id is not echoed: it may be a key pasted into the wrong place.
            if not _KEY_ID.fullmatch(key_id):
                raise ValueError(f"a master key id is invalid; ids are {_KEY_ID_RULE}")
            _check_key(key, f"master key {key_id!r}")

    def __repr__(self) -> str:
        return f"MasterKeyRing(current_id={self.current_id!r}, ids={list(self.keys)!r})"

    @classmethod
    def parse(cls, text: str) -> MasterKeyRing:
        """Read ``"id1:base64key1,id2:base64key2"`` (the first is current); whitespace and newlines are ignored."""
        keys: dict[str, bytes] = {}
        entries = [entry.strip() for entry in text.split(",")]
        if not any(entries):
            raise ValueError("no master keys given; expected 'id:base64key[,id:base64key...]'")
        for position, entry in enumerate(entries, start=1):
            key_id, colon, encoded = entry.partition(":")
            key_id = key_id.strip()
            if not colon or not key_id:
                raise ValueError(f"master key entry {position} is not 'id:base64key'")
            if not _KEY_ID.fullmatch(key_id):
                raise ValueError(f"master key entry {position} has an invalid id; ids are {_KEY_ID_RULE}")
            if key_id in keys:
                raise ValueError(f"master key id {key_id!r} appears more than once")
            try:
                # `from None`: the decoder's error, and anything it might quote, stays out of tracebacks.
                key = base64.b64decode("".join(encoded.split()), validate=True)
            except binascii.Error:
                raise ValueError(f"master key {key_id!r} is not valid base64") from None
            _check_key(key, f"master key {key_id!r}")
            keys[key_id] = key
        return cls(keys=keys, current_id=next(iter(keys)))

    def get(self, key_id: str) -> bytes:
        try:
            return self.keys[key_id]
        except KeyError:
            raise KeyUnavailable(f"master key {key_id!r} is not in the ring (have {sorted(self.keys)!r})") from None


def generate_master_key(key_id: str | None = None) -> str:
    """A new ``"id:base64key"`` entry to put first in the master-key setting."""
    key_id = key_id or f"mk-{secrets.token_hex(4)}"
    entry = f"{key_id}:{base64.b64encode(os.urandom(KEY_BYTES)).decode()}"
    MasterKeyRing.parse(entry)  # reject a bad id here rather than at the next deploy
    return entry


# --- wrapping ----------------------------------------------------------------------------------------------------
# AES-GCM rather than AES key wrap (RFC 3394/5649): key wrap has no associated data, so a wrapped key moved to
# another tenant's or asset's row would still open. GCM binds it to its owner; a random 96-bit nonce is safe
# here because each key-encryption key wraps far fewer than 2**32 keys.


def wrap(key: bytes, *, kek: bytes, context: str) -> bytes:
    """Encrypt ``key`` under ``kek`` for the owner named by ``context``."""
    _check_key(key, "key to wrap")
    _check_key(kek, "key-encryption key")
    nonce = os.urandom(NONCE_BYTES)
    return _KEY_V1 + nonce + AESGCM(kek).encrypt(nonce, key, _KEY_V1 + context.encode())


def unwrap(blob: bytes, *, kek: bytes, context: str) -> bytes:
    """The key ``wrap`` sealed, or ``KeyUnavailable`` if ``kek``, ``context`` or ``blob`` differ."""
    _check_key(kek, "key-encryption key")
    if len(blob) != _WRAPPED_LEN or blob[:1] != _KEY_V1:
        raise KeyUnavailable(f"wrapped key for {context} is malformed or of an unknown version")
    nonce = blob[1 : 1 + NONCE_BYTES]
    try:
        return AESGCM(kek).decrypt(nonce, blob[1 + NONCE_BYTES :], _KEY_V1 + context.encode())
    except InvalidTag:
        raise KeyUnavailable(f"wrapped key for {context} does not open: wrong key, wrong owner, or altered") from None


@dataclass(frozen=True)
class WrappedKey:
    """A tenant key as stored: the id of the master key that wrapped it, and the wrapped bytes."""

    master_id: str
    blob: bytes


def new_tenant_key() -> bytes:
    return os.urandom(KEY_BYTES)


def seal_tenant_key(tenant_key: bytes, ring: MasterKeyRing, tenant_id: Owner) -> WrappedKey:
    kek = ring.get(ring.current_id)
    return WrappedKey(ring.current_id, wrap(tenant_key, kek=kek, context=f"tenant:{tenant_id}"))


def open_tenant_key(wrapped: WrappedKey, ring: MasterKeyRing, tenant_id: Owner) -> bytes:
    try:
        kek = ring.get(wrapped.master_id)
    except KeyUnavailable as exc:
        raise KeyUnavailable(f"tenant key for tenant:{tenant_id} cannot be opened: {exc}") from None
    return unwrap(wrapped.blob, kek=kek, context=f"tenant:{tenant_id}")


def rewrap_tenant_key(wrapped: WrappedKey, ring: MasterKeyRing, tenant_id: Owner) -> WrappedKey:
    """The tenant key wrapped by the ring's current master; ``wrapped`` itself when it already is."""
    if wrapped.master_id == ring.current_id:
        return wrapped
    return seal_tenant_key(open_tenant_key(wrapped, ring, tenant_id), ring, tenant_id)


def new_data_key() -> bytes:
    return os.urandom(KEY_BYTES)


def seal_data_key(data_key: bytes, tenant_key: bytes, asset_id: Owner) -> bytes:
    return wrap(data_key, kek=tenant_key, context=f"asset:{asset_id}")


def open_data_key(blob: bytes, tenant_key: bytes, asset_id: Owner) -> bytes:
    return unwrap(blob, kek=tenant_key, context=f"asset:{asset_id}")


# --- content -----------------------------------------------------------------------------------------------------


def encrypt(content: bytes, data_key: bytes, *, asset_id: Owner) -> bytes:
    """Content in one piece (up to 2 GiB, held in memory); ``encrypt_stream`` for anything large."""
    _check_key(data_key, "data key")
    nonce = os.urandom(NONCE_BYTES)
    return _CONTENT_V1 + nonce + AESGCM(data_key).encrypt(nonce, content, _CONTENT_V1 + f"asset:{asset_id}".encode())


def decrypt(blob: bytes, data_key: bytes, *, asset_id: Owner) -> bytes:
    _check_key(data_key, "data key")
    if len(blob) < 1 + NONCE_BYTES + TAG_BYTES or blob[:1] != _CONTENT_V1:
        raise ContentInvalid(f"content of asset:{asset_id} is malformed or of an unknown version")
    nonce = blob[1 : 1 + NONCE_BYTES]
    try:
        return AESGCM(data_key).decrypt(nonce, blob[1 + NONCE_BYTES :], _CONTENT_V1 + f"asset:{asset_id}".encode())
    except InvalidTag:
        raise ContentInvalid(f"content of asset:{asset_id} does not authenticate") from None


def _frame_nonce(prefix: bytes, counter: int) -> bytes:
    if counter >= _MAX_CHUNKS:
        raise ValueError(f"a stream holds at most {_MAX_CHUNKS} chunks; use a larger chunk_size")
    return prefix + counter.to_bytes(4, "big")


# The stream functions check their arguments, then return a generator, so a bad key or chunk size fails at the
# call rather than at the first read, possibly far away.


def encrypt_stream(
    chunks: Iterable[bytes], data_key: bytes, *, asset_id: Owner, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[bytes]:
    """The stream format (module docstring) for ``chunks`` split anywhere: the header, then the frames."""
    _check_key(data_key, "data key")
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise ValueError(f"chunk_size must be between 1 and {MAX_CHUNK_SIZE}")
    return _encrypt_frames(chunks, AESGCM(data_key), f"asset:{asset_id}".encode(), chunk_size)


def _encrypt_frames(chunks: Iterable[bytes], aead: AESGCM, owner: bytes, chunk_size: int) -> Iterator[bytes]:
    prefix = os.urandom(_PREFIX_BYTES)
    header = _STREAM_V1 + prefix + chunk_size.to_bytes(4, "big")
    yield header
    buffer, counter = bytearray(), 0
    for piece in chunks:
        buffer += piece
        # `>=`: a full chunk is never final, so the final frame is always short and needs no length field.
        while len(buffer) >= chunk_size:
            yield aead.encrypt(_frame_nonce(prefix, counter), bytes(buffer[:chunk_size]), header + b"\x00" + owner)
            del buffer[:chunk_size]  # cheap: CPython's bytearray drops a prefix without moving the rest
            counter += 1
    yield aead.encrypt(_frame_nonce(prefix, counter), bytes(buffer), header + b"\x01" + owner)


def decrypt_stream(chunks: Iterable[bytes], data_key: bytes, *, asset_id: Owner) -> Iterator[bytes]:
    """Plaintext chunks from ``encrypt_stream`` output split anywhere. Chunks are yielded as they authenticate,
    before the end is seen: trust (commit, publish) the result only once the iterator finishes without raising."""
    _check_key(data_key, "data key")
    return _decrypt_frames(chunks, AESGCM(data_key), asset_id)


def _decrypt_frames(chunks: Iterable[bytes], aead: AESGCM, asset_id: Owner) -> Iterator[bytes]:
    owner = f"asset:{asset_id}".encode()
    buffer, header, prefix, counter, frame = bytearray(), b"", b"", 0, 0
    for piece in chunks:
        buffer += piece
        if not header:
            if len(buffer) < _HEADER_LEN:
                continue
            header, prefix = bytes(buffer[:_HEADER_LEN]), bytes(buffer[1 : 1 + _PREFIX_BYTES])
            del buffer[:_HEADER_LEN]
            chunk_size = int.from_bytes(header[-4:], "big")
            if header[:1] != _STREAM_V1 or not 1 <= chunk_size <= MAX_CHUNK_SIZE:
                raise ContentInvalid(f"stream of asset:{asset_id} is malformed or of an unknown version")
            frame = chunk_size + TAG_BYTES
        while len(buffer) >= frame:
            yield _open_frame(aead, prefix, counter, bytes(buffer[:frame]), header + b"\x00" + owner, asset_id)
            del buffer[:frame]
            counter += 1
    if not header or len(buffer) < TAG_BYTES:
        raise ContentInvalid(f"stream of asset:{asset_id} is truncated")
    yield _open_frame(aead, prefix, counter, bytes(buffer), header + b"\x01" + owner, asset_id)


def _open_frame(aead: AESGCM, prefix: bytes, counter: int, sealed: bytes, aad: bytes, asset_id: Owner) -> bytes:
    # Past the counter's range is no stream encrypt_stream writes, so it is tampering, not a caller's mistake.
    if counter >= _MAX_CHUNKS:
        raise ContentInvalid(f"stream of asset:{asset_id} is longer than any stream written")
    try:
        return aead.decrypt(_frame_nonce(prefix, counter), sealed, aad)
    except InvalidTag:
        raise ContentInvalid(f"stream of asset:{asset_id} chunk {counter} is altered, cut or out of order") from None
