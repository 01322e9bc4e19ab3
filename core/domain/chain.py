"""The audit log's hash chain, free of the ORM so it can be verified offline and benchmarked on its own.

Each event's ``hash`` is SHA-256 over the canonical encoding of every other field, ``prev_hash`` included, so
changing, removing or reordering any event breaks the chain from that event on. The canonical encoding is
JSON with sorted keys, no insignificant whitespace, UTF-8, and times as UTC ISO-8601 with microseconds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64

# The fields that are hashed, in the order they appear in the model (the encoding itself sorts them).
HASHED_FIELDS = (
    "seq",
    "at",
    "actor_type",
    "actor_id",
    "actor_label",
    "api_key_prefix",
    "tenant_id",
    "action",
    "target_type",
    "target_id",
    "data",
    "prev_hash",
)


def _refuse_floats(value: Any) -> None:
    # Binary floats have no single spelling that every database gives back (PostgreSQL's jsonb returns 1e16 as
    # 10000000000000000 and -0.0 as 0.0), so a hash over one would not survive a round trip. Amounts are
    # Decimal strings and quantities integers everywhere in the product; the audit log holds the same.
    # Every audited change passes its data through here twice, so scalars are checked in their container's loop,
    # without a call each.
    if isinstance(value, dict):
        items: Iterable[Any] = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        items = (value,)
    for item in items:
        if isinstance(item, float):
            raise ValueError(f"audit data holds no floats ({item!r}); pass an int, or a Decimal as a string")
        if isinstance(item, dict | list | tuple):
            _refuse_floats(item)


def canonical_json(value: Any) -> str:
    """The one JSON spelling of ``value`` that is hashed: strings, integers, booleans, null, lists and objects.
    Anything else (floats, sets, objects) is refused rather than given a spelling that might not round-trip."""
    _refuse_floats(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def format_time(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("audit times must be timezone-aware")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def event_hash(fields: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of an event's canonical encoding; ``fields`` holds every name in HASHED_FIELDS."""
    encoded = {name: fields[name] for name in HASHED_FIELDS}
    encoded["at"] = format_time(fields["at"])
    return hashlib.sha256(canonical_json(encoded).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    count: int
    bad_seq: int | None = None
    reason: str | None = None

    def describe(self) -> str:
        if self.ok:
            return f"audit chain ok: {self.count} events"
        return f"audit chain broken at seq {self.bad_seq}: {self.reason}"


def verify(events: Iterable[Mapping[str, Any]], *, head: tuple[int, str] | None = None) -> VerifyResult:
    """Walk events in ``seq`` order and report the first one that breaks the chain.

    ``head`` is the recorded chain head (last seq and hash); it catches events removed from the end, which
    no link inside the chain can show.
    """
    expected_seq = 1
    prev_hash = GENESIS_HASH
    count = 0
    for event in events:
        seq = event["seq"]
        if seq != expected_seq:
            return VerifyResult(False, count, expected_seq, f"gap: expected seq {expected_seq}, found {seq}")
        if event["prev_hash"] != prev_hash:
            return VerifyResult(False, count, seq, "broken link: prev_hash does not match the previous event")
        if event_hash(event) != event["hash"]:
            return VerifyResult(False, count, seq, "hash mismatch: the event's content was changed")
        prev_hash = event["hash"]
        expected_seq += 1
        count += 1
    return check_head(count, prev_hash, head)


def check_head(count: int, last_hash: str, head: tuple[int, str] | None) -> VerifyResult:
    """The end of a walk: ``count`` events ending in ``last_hash`` must be what the recorded head says."""
    if head is not None:
        head_seq, head_hash = head
        if head_seq != count:
            return VerifyResult(
                False, count, count + 1, f"truncated: the chain head records {head_seq} events, found {count}"
            )
        if head_hash != last_hash:
            return VerifyResult(False, count, count, "head mismatch: the last event is not the recorded head")
    return VerifyResult(True, count)
