"""Envelope encryption (compliance/domain/envelope.py) without a database: round trips, owner binding, tamper and
truncation detection, crypto-shredding, and master-key rotation."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compliance.domain.envelope import (
    DEFAULT_CHUNK_SIZE,
    TAG_BYTES,
    ContentInvalid,
    EnvelopeError,
    KeyUnavailable,
    MasterKeyRing,
    WrappedKey,
    decrypt,
    decrypt_stream,
    encrypt,
    encrypt_stream,
    fingerprint,
    generate_master_key,
    new_data_key,
    new_tenant_key,
    open_data_key,
    open_tenant_key,
    rewrap_tenant_key,
    seal_data_key,
    seal_tenant_key,
    unwrap,
    wrap,
)

HEADER = 13  # stream header: version, nonce prefix, chunk size


def key_of(entry: str) -> bytes:
    return base64.b64decode(entry.partition(":")[2])


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, repeats allowed), the way storage reads might return it."""
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def frames(stream: bytes, chunk_size: int) -> tuple[bytes, list[bytes]]:
    size = chunk_size + TAG_BYTES
    body = stream[HEADER:]
    return stream[:HEADER], [body[i : i + size] for i in range(0, len(body), size)]


def leaks(message: str, *keys: bytes) -> bool:
    return any(k.hex() in message or base64.b64encode(k).decode() in message or repr(k) in message for k in keys)


# --- content ---------------------------------------------------------------------------------------------------


@given(st.binary(max_size=4096), st.integers(min_value=0, max_value=2**40) | st.text(max_size=10))
def test_it_round_trips_content(content: bytes, asset_id: int | str) -> None:
    key = new_data_key()
    assert decrypt(encrypt(content, key, asset_id=asset_id), key, asset_id=asset_id) == content


@given(
    content=st.binary(max_size=600),
    chunk_size=st.integers(min_value=1, max_value=64),
    cuts_in=st.lists(st.integers(min_value=0), max_size=8),
    cuts_out=st.lists(st.integers(min_value=0), max_size=8),
)
def test_it_round_trips_streams_split_anywhere(
    content: bytes, chunk_size: int, cuts_in: list[int], cuts_out: list[int]
) -> None:
    key = new_data_key()
    stream = b"".join(encrypt_stream(split(content, cuts_in), key, asset_id=7, chunk_size=chunk_size))
    # Every frame but the last is full and the last is short, whatever sizes the input came in.
    full, rest = divmod(len(content), chunk_size)
    assert len(stream) == HEADER + full * (chunk_size + TAG_BYTES) + rest + TAG_BYTES
    assert b"".join(decrypt_stream(split(stream, cuts_out), key, asset_id=7)) == content


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 128, 640])
def test_it_round_trips_streams_at_the_edges(length: int) -> None:
    key, content = new_data_key(), bytes(range(256)) * 3
    content = content[:length]
    stream = list(encrypt_stream([content], key, asset_id="a", chunk_size=64))
    assert b"".join(decrypt_stream(stream, key, asset_id="a")) == content


def test_it_streams_in_one_mebibyte_chunks_by_default() -> None:
    key, content = new_data_key(), b"x" * (2 * DEFAULT_CHUNK_SIZE + 5)
    stream = b"".join(encrypt_stream(iter([content]), key, asset_id=1))
    assert int.from_bytes(stream[9:13], "big") == DEFAULT_CHUNK_SIZE
    assert b"".join(decrypt_stream([stream], key, asset_id=1)) == content


def test_it_rejects_content_for_another_asset_or_under_another_key() -> None:
    key = new_data_key()
    blob = encrypt(b"weights", key, asset_id=1)
    stream = b"".join(encrypt_stream([b"weights"], key, asset_id=1))
    with pytest.raises(ContentInvalid, match="asset:2"):
        decrypt(blob, key, asset_id=2)
    with pytest.raises(ContentInvalid):
        decrypt(blob, new_data_key(), asset_id=1)
    with pytest.raises(ContentInvalid):
        b"".join(decrypt_stream([stream], key, asset_id=2))
    with pytest.raises(ContentInvalid):
        b"".join(decrypt_stream([stream], new_data_key(), asset_id=1))


@given(st.binary(max_size=200), st.data())
def test_it_detects_any_altered_byte(content: bytes, data: st.DataObject) -> None:
    key = new_data_key()
    for blob, open_ in [
        (encrypt(content, key, asset_id=3), lambda b: decrypt(b, key, asset_id=3)),
        (
            b"".join(encrypt_stream([content], key, asset_id=3, chunk_size=16)),
            lambda b: b"".join(decrypt_stream([b], key, asset_id=3)),
        ),
    ]:
        at = data.draw(st.integers(min_value=0, max_value=len(blob) - 1))
        bit = data.draw(st.integers(min_value=0, max_value=7))
        altered = bytearray(blob)
        altered[at] ^= 1 << bit
        with pytest.raises(ContentInvalid):
            open_(bytes(altered))


@given(st.binary(max_size=200), st.data())
def test_it_detects_a_stream_cut_anywhere(content: bytes, data: st.DataObject) -> None:
    key = new_data_key()
    stream = b"".join(encrypt_stream([content], key, asset_id=3, chunk_size=16))
    cut = data.draw(st.integers(min_value=0, max_value=len(stream) - 1))
    with pytest.raises(ContentInvalid):
        b"".join(decrypt_stream([stream[:cut]], key, asset_id=3))


@pytest.mark.parametrize(
    "rearrange",
    [
        pytest.param(lambda f: [f[1], f[0], *f[2:]], id="reordered"),
        pytest.param(lambda f: [f[0], *f[2:]], id="middle-frame-dropped"),
        pytest.param(lambda f: f[:-1], id="final-frame-dropped"),
        pytest.param(lambda f: [f[0], *f], id="frame-repeated"),
        pytest.param(lambda f: [*f, f[-1]], id="data-after-the-final-frame"),
    ],
)
def test_it_detects_reordered_dropped_and_extra_frames(rearrange: Callable[[list[bytes]], list[bytes]]) -> None:
    key = new_data_key()
    header, sealed = frames(b"".join(encrypt_stream([bytes(range(50))], key, asset_id=3, chunk_size=16)), 16)
    assert len(sealed) == 4  # three full frames and a final one of two bytes
    with pytest.raises(ContentInvalid):
        b"".join(decrypt_stream([header, *rearrange(sealed)], key, asset_id=3))


def test_it_detects_a_dropped_empty_final_frame_after_an_exact_multiple() -> None:
    key = new_data_key()
    stream = b"".join(encrypt_stream([b"y" * 32], key, asset_id=3, chunk_size=16))
    header, sealed = frames(stream, 16)
    assert len(sealed[-1]) == TAG_BYTES  # the final frame holds no plaintext, only the end marker
    with pytest.raises(ContentInvalid, match="truncated"):
        b"".join(decrypt_stream([header, *sealed[:-1]], key, asset_id=3))


def test_it_refuses_a_stream_header_it_does_not_know() -> None:
    key = new_data_key()
    stream = b"".join(encrypt_stream([b"z"], key, asset_id=3))
    for forged in [b"\x09" + stream[1:], stream[:9] + (2**31).to_bytes(4, "big") + stream[13:], stream[:5]]:
        with pytest.raises(ContentInvalid):
            b"".join(decrypt_stream([forged], key, asset_id=3))


# --- wrapping and owners ---------------------------------------------------------------------------------------


def test_it_wraps_keys_in_a_fixed_versioned_format() -> None:
    kek, key = new_tenant_key(), new_data_key()
    blob = wrap(key, kek=kek, context="asset:1")
    assert len(blob) == 1 + 12 + 32 + 16
    assert blob[0] == 1
    assert unwrap(blob, kek=kek, context="asset:1") == key
    assert wrap(key, kek=kek, context="asset:1") != blob  # a fresh nonce each time


def test_it_binds_wrapped_keys_to_their_owner() -> None:
    ring = MasterKeyRing.parse(generate_master_key("m1"))
    tenant_key, data_key = new_tenant_key(), new_data_key()
    wrapped_tenant = seal_tenant_key(tenant_key, ring, 42)
    sealed_data = seal_data_key(data_key, tenant_key, 7)
    assert open_tenant_key(wrapped_tenant, ring, 42) == tenant_key
    assert open_tenant_key(wrapped_tenant, ring, "42") == tenant_key  # ids are compared as text
    assert open_data_key(sealed_data, tenant_key, 7) == data_key
    with pytest.raises(KeyUnavailable, match="tenant:43"):
        open_tenant_key(wrapped_tenant, ring, 43)
    with pytest.raises(KeyUnavailable, match="asset:8"):
        open_data_key(sealed_data, tenant_key, 8)
    with pytest.raises(KeyUnavailable):
        open_data_key(sealed_data, new_tenant_key(), 7)
    with pytest.raises(KeyUnavailable):
        unwrap(sealed_data, kek=tenant_key, context="tenant:7")  # same id, other kind of owner
    with pytest.raises(KeyUnavailable, match="malformed"):
        open_data_key(sealed_data[:-1], tenant_key, 7)


@given(st.data())
def test_it_detects_an_altered_wrapped_key(data: st.DataObject) -> None:
    kek = new_tenant_key()
    blob = bytearray(wrap(new_data_key(), kek=kek, context="asset:1"))
    blob[data.draw(st.integers(min_value=0, max_value=len(blob) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(KeyUnavailable):
        unwrap(bytes(blob), kek=kek, context="asset:1")


def test_it_refuses_bad_arguments_at_the_call() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        wrap(b"short", kek=new_tenant_key(), context="asset:1")
    with pytest.raises(ValueError, match="32 bytes"):
        encrypt(b"", b"k" * 16, asset_id=1)
    # Not at the first read of the returned iterator, which may happen far from the mistake.
    with pytest.raises(ValueError, match="32 bytes"):
        decrypt_stream([], b"k" * 16, asset_id=1)
    with pytest.raises(ValueError, match="chunk_size"):
        encrypt_stream([], new_data_key(), asset_id=1, chunk_size=0)


# --- the model the ORM layer will store ------------------------------------------------------------------------


@dataclass
class Tenant:
    """What is stored for a tenant: its wrapped key, and per asset the sealed data key and the content."""

    id: int
    wrapped: WrappedKey | None
    data_keys: dict[int, bytes] = field(default_factory=dict)
    contents: dict[int, bytes] = field(default_factory=dict)
    plain: dict[int, bytes] = field(default_factory=dict)  # what the test expects to read back

    def read(self, ring: MasterKeyRing, asset_id: int) -> bytes:
        assert self.wrapped is not None
        tenant_key = open_tenant_key(self.wrapped, ring, self.id)
        return decrypt(
            self.contents[asset_id], open_data_key(self.data_keys[asset_id], tenant_key, asset_id), asset_id=asset_id
        )


def onboard(ring: MasterKeyRing, tenant_id: int, assets: list[bytes], first_asset: int) -> Tenant:
    tenant_key = new_tenant_key()
    tenant = Tenant(tenant_id, seal_tenant_key(tenant_key, ring, tenant_id))
    for asset_id, content in enumerate(assets, start=first_asset):
        data_key = new_data_key()
        tenant.data_keys[asset_id] = seal_data_key(data_key, tenant_key, asset_id)
        tenant.contents[asset_id] = encrypt(content, data_key, asset_id=asset_id)
        tenant.plain[asset_id] = content
    return tenant


# --- crypto-shredding ------------------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=64), min_size=2, max_size=5), st.data())
def test_shredded_content_cannot_be_decrypted(assets: list[bytes], data: st.DataObject) -> None:
    entries = [generate_master_key(f"m{i}") for i in range(2)]
    ring = MasterKeyRing.parse(",".join(entries))
    tenant = onboard(ring, 1, assets, first_asset=100)
    shredded = data.draw(st.sampled_from(sorted(tenant.data_keys)))
    del tenant.data_keys[shredded]  # the shredding: the wrapped data key is gone, the content blob stays

    tenant_key = open_tenant_key(tenant.wrapped, ring, 1)  # type: ignore[arg-type]
    others = [open_data_key(blob, tenant_key, a) for a, blob in tenant.data_keys.items()]
    # Every key an operator still holds: the master keys, the tenant key, and the tenant's other data keys.
    for key in [*map(key_of, entries), tenant_key, *others]:
        with pytest.raises(ContentInvalid):
            decrypt(tenant.contents[shredded], key, asset_id=shredded)
    # The tenant's other assets are untouched.
    for asset_id in tenant.data_keys:
        assert tenant.read(ring, asset_id) == tenant.plain[asset_id]


@given(st.lists(st.binary(max_size=64), min_size=1, max_size=4))
def test_a_shredded_tenant_key_takes_every_asset_with_it(assets: list[bytes]) -> None:
    entries = [generate_master_key(f"m{i}") for i in range(2)]
    ring = MasterKeyRing.parse(",".join(entries))
    tenant = onboard(ring, 1, assets, first_asset=100)
    tenant.wrapped = None  # account closure: only the ring, the sealed data keys and the contents remain

    masters = list(map(key_of, entries))
    for asset_id, sealed in tenant.data_keys.items():
        for key in masters:
            with pytest.raises(KeyUnavailable):
                open_data_key(sealed, key, asset_id)
            with pytest.raises(ContentInvalid):
                decrypt(tenant.contents[asset_id], key, asset_id=asset_id)


# --- master-key rotation ---------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    tenants=st.lists(st.lists(st.binary(max_size=32), max_size=3), min_size=1, max_size=4),
    rotations=st.integers(min_value=1, max_value=3),
    forgotten=st.none() | st.integers(min_value=0, max_value=3),
)
def test_master_key_rotation_keeps_everything_readable(
    tenants: list[list[bytes]], rotations: int, forgotten: int | None
) -> None:
    entry = generate_master_key("m0")
    ring = MasterKeyRing.parse(entry)
    stored = [onboard(ring, tid, assets, first_asset=10 * tid) for tid, assets in enumerate(tenants, start=1)]
    before = [(dict(t.data_keys), dict(t.contents)) for t in stored]
    # Optionally one tenant is missed by the last rotation's re-wrap, to show what dropping its master costs.
    missed = None if forgotten is None else stored[forgotten % len(stored)]

    for n in range(1, rotations + 1):
        new_entry = generate_master_key(f"m{n}")
        ring = MasterKeyRing.parse(f"{new_entry},{entry}")  # new first = current; old still opens
        assert ring.current_id == f"m{n}"
        for tenant in stored:
            assert tenant.wrapped is not None
            if tenant is missed and n == rotations:
                continue
            tenant.wrapped = rewrap_tenant_key(tenant.wrapped, ring, tenant.id)
            assert tenant.wrapped.master_id == f"m{n}"
            assert rewrap_tenant_key(tenant.wrapped, ring, tenant.id) is tenant.wrapped  # already current
        entry, ring = new_entry, MasterKeyRing.parse(new_entry)  # the old master key is dropped

        for tenant in stored:
            if tenant is missed and n == rotations:
                with pytest.raises(KeyUnavailable, match=rf"tenant:{tenant.id}.*'m{n - 1}' is not in the ring"):
                    open_tenant_key(tenant.wrapped, ring, tenant.id)  # type: ignore[arg-type]
                continue
            for asset_id, content in tenant.plain.items():
                assert tenant.read(ring, asset_id) == content
    # Rotation re-wraps tenant keys only: sealed data keys and contents are the same bytes as before.
    assert [(t.data_keys, t.contents) for t in stored] == before


def test_a_tenant_key_not_rewrapped_fails_once_its_master_is_dropped() -> None:
    old, new = generate_master_key("old-2025"), generate_master_key("new-2026")
    tenant = onboard(MasterKeyRing.parse(old), 5, [b"checkpoint"], first_asset=1)
    ring = MasterKeyRing.parse(f"{new},{old}")
    assert tenant.read(ring, 1) == b"checkpoint"  # before the old key is dropped, it still opens
    ring = MasterKeyRing.parse(new)
    with pytest.raises(KeyUnavailable, match=r"tenant:5.*'old-2025' is not in the ring") as caught:
        tenant.read(ring, 1)
    assert not leaks(str(caught.value), key_of(old), key_of(new))
    with pytest.raises(KeyUnavailable, match="old-2025"):
        rewrap_tenant_key(tenant.wrapped, ring, 5)  # type: ignore[arg-type]


# --- the master key ring ---------------------------------------------------------------------------------------


def test_it_parses_a_ring_from_settings_or_a_file() -> None:
    a, b = generate_master_key("a"), generate_master_key("b.2")
    ring = MasterKeyRing.parse(f"  {a} ,\n{b}\n")
    assert ring.current_id == "a"
    assert dict(ring.keys) == {"a": key_of(a), "b.2": key_of(b)}
    assert ring.get("b.2") == key_of(b)
    assert not leaks(repr(ring), key_of(a), key_of(b))
    with pytest.raises(TypeError):
        ring.keys["c"] = key_of(a)  # type: ignore[index]


def test_it_generates_distinct_usable_master_keys() -> None:
    first, second = generate_master_key(), generate_master_key()
    assert first.partition(":")[0] != second.partition(":")[0]
    assert len(key_of(first)) == 32
    assert key_of(first) != key_of(second)
    with pytest.raises(ValueError, match="invalid id"):
        generate_master_key("has space")


SECRET = base64.b64encode(b"S" * 32).decode()
SHORT = base64.b64encode(b"S" * 16).decode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no master keys"),
        (" , ", "no master keys"),
        (SECRET, "entry 1 is not 'id:base64key'"),
        (f"a:{SECRET},", "entry 2 is not 'id:base64key'"),
        (f":{SECRET}", "entry 1 is not 'id:base64key'"),
        (f"a:{SECRET},a:{SECRET}", "'a' appears more than once"),
        (f"a:{SHORT}", "'a' must be 32 bytes, not 16"),
        (f"a:{SECRET[:-2]}!", "'a' is not valid base64"),
        (f"a:{SECRET[:-1]}", "'a' is not valid base64"),
        (f"{SECRET}:a", "entry 1 has an invalid id"),  # a key pasted where the id goes ('=' is no id character)
        (f"-a:{SECRET}", "entry 1 has an invalid id"),
    ],
    ids=[
        "empty",
        "blank",
        "no-id",
        "trailing-comma",
        "empty-id",
        "duplicate",
        "short",
        "not-base64",
        "padding",
        "key-as-id",
        "bad-id",
    ],
)
def test_it_explains_a_bad_ring_without_showing_keys(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        MasterKeyRing.parse(text)
    shown = str(caught.value)
    assert SECRET[:16] not in shown
    assert SHORT[:16] not in shown
    # Nor does a chained exception (the base64 decoder's) show up in a traceback.
    assert caught.value.__context__ is None or caught.value.__suppress_context__


def test_it_checks_a_ring_built_directly() -> None:
    with pytest.raises(ValueError, match="not in the ring"):
        MasterKeyRing(keys={"a": b"k" * 32}, current_id="b")
    with pytest.raises(ValueError, match="invalid"):
        MasterKeyRing(keys={"a b": b"k" * 32}, current_id="a b")
    with pytest.raises(ValueError, match="32 bytes"):
        MasterKeyRing(keys={"a": b"k"}, current_id="a")


@given(st.data())
def test_no_error_message_contains_key_material(data: st.DataObject) -> None:
    entries = [generate_master_key(f"m{i}") for i in range(2)]
    ring, other = MasterKeyRing.parse(entries[0]), MasterKeyRing.parse(entries[1])
    tenant_key, data_key = new_tenant_key(), new_data_key()
    wrapped = seal_tenant_key(tenant_key, ring, 1)
    sealed = seal_data_key(data_key, tenant_key, 2)
    content = encrypt(b"secret", data_key, asset_id=2)
    stream = b"".join(encrypt_stream([b"secret"], data_key, asset_id=2))
    failures = [
        lambda: open_tenant_key(wrapped, other, 1),
        lambda: open_tenant_key(WrappedKey("m1", wrapped.blob), other, 1),
        lambda: open_data_key(sealed, data_key, 2),
        lambda: open_data_key(sealed, tenant_key, 3),
        lambda: decrypt(content, tenant_key, asset_id=2),
        lambda: b"".join(decrypt_stream([stream[:-1]], data_key, asset_id=2)),
        lambda: b"".join(decrypt_stream([stream], tenant_key, asset_id=2)),
    ]
    with pytest.raises(EnvelopeError) as caught:
        data.draw(st.sampled_from(failures))()
    assert not leaks(str(caught.value), tenant_key, data_key, *map(key_of, entries))


def test_it_fingerprints_keys_for_logs() -> None:
    key = new_data_key()
    assert fingerprint(key) == fingerprint(bytes(key))
    assert len(fingerprint(key)) == 16
    assert set(fingerprint(key)) <= set("0123456789abcdef")
    assert fingerprint(key) != fingerprint(new_data_key())
