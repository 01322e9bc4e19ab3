"""The audit hash chain (core/domain/chain.py) on its own, without a database: what verify() accepts and catches."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from core.domain.chain import (
    GENESIS_HASH,
    HASHED_FIELDS,
    VerifyResult,
    canonical_json,
    event_hash,
    format_time,
    verify,
)

# --- building chains -------------------------------------------------------------------------------------------

OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
TIMES = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS)  # noqa: DTZ001
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text()
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)

# What an event says, apart from its place in the chain (seq, prev_hash) and its hash.
CONTENT: dict[str, st.SearchStrategy[Any]] = {
    "at": TIMES,
    "actor_type": st.sampled_from(["user", "api_key", "system"]),
    "actor_id": st.text(max_size=20),
    "actor_label": st.text(max_size=20),
    "api_key_prefix": st.text(max_size=8),
    "tenant_id": st.none() | st.integers(min_value=1),
    "action": st.text(max_size=30),
    "target_type": st.text(max_size=20),
    "target_id": st.text(max_size=20),
    "data": st.dictionaries(st.text(max_size=10), JSON, max_size=4),
}
CONTENTS = st.lists(st.fixed_dictionaries(CONTENT), min_size=1, max_size=8)


def build_chain(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Link event contents into a chain exactly as audit_record does."""
    events = []
    prev_hash = GENESIS_HASH
    for seq, content in enumerate(contents, start=1):
        fields = {**content, "seq": seq, "prev_hash": prev_hash}
        event = {**fields, "hash": event_hash(fields)}
        events.append(event)
        prev_hash = event["hash"]
    return events


def head_of(events: list[dict[str, Any]]) -> tuple[int, str]:
    return (len(events), events[-1]["hash"] if events else GENESIS_HASH)


def broken_at(result: VerifyResult, seq: int) -> str:
    """The reason verify() gave for a chain it found broken at ``seq``."""
    assert not result.ok
    assert result.bad_seq == seq
    assert result.reason is not None
    return result.reason


def encoded(name: str, value: Any) -> str:
    """How one field is spelled in the hashed encoding."""
    return format_time(value) if name == "at" else canonical_json(value)


# --- properties ------------------------------------------------------------------------------------------------


@given(CONTENTS)
def test_it_verifies_every_chain_built_with_event_hash(contents):
    events = build_chain(contents)
    result = verify(events, head=head_of(events))
    assert result.ok
    assert result.count == len(events)
    assert (result.bad_seq, result.reason) == (None, None)
    assert result.describe() == f"audit chain ok: {len(events)} events"


def test_it_verifies_an_empty_chain_against_the_genesis_head():
    assert verify([], head=(0, GENESIS_HASH)).ok
    assert verify([]).count == 0


@given(CONTENTS, st.data())
def test_it_names_the_event_whose_hashed_content_changed(contents, data):
    events = build_chain(contents)
    index = data.draw(st.integers(0, len(events) - 1), label="index")
    name = data.draw(st.sampled_from(sorted(CONTENT)), label="field")
    new_value = data.draw(CONTENT[name], label="new value")
    assume(encoded(name, new_value) != encoded(name, events[index][name]))
    events[index] = {**events[index], name: new_value}

    result = verify(events, head=head_of(events))

    assert broken_at(result, index + 1).startswith("hash mismatch")
    assert result.count == index
    assert result.describe().startswith(f"audit chain broken at seq {index + 1}: hash mismatch")


def test_it_covers_every_hashed_field_but_the_chain_position_in_the_tamper_property():
    # seq and prev_hash are hashed too, but changing them is caught earlier as a gap or a broken link (below).
    assert set(CONTENT) == set(HASHED_FIELDS) - {"seq", "prev_hash"}


@given(CONTENTS.filter(lambda c: len(c) >= 2), st.data())
def test_it_reports_a_gap_where_an_event_was_removed(contents, data):
    events = build_chain(contents)
    index = data.draw(st.integers(0, len(events) - 2), label="removed index")  # any but the last
    del events[index]

    result = verify(events, head=head_of(build_chain(contents)))

    reason = broken_at(result, index + 1)
    assert reason.startswith("gap")
    assert f"expected seq {index + 1}, found {index + 2}" in reason


@given(CONTENTS.filter(lambda c: len(c) >= 2), st.data())
def test_it_reports_a_gap_where_two_events_were_swapped(contents, data):
    events = build_chain(contents)
    index = data.draw(st.integers(0, len(events) - 2), label="index")
    events[index], events[index + 1] = events[index + 1], events[index]

    result = verify(events)

    assert broken_at(result, index + 1).startswith("gap")


@given(CONTENTS, st.data())
def test_it_catches_events_removed_from_the_end_by_the_head(contents, data):
    events = build_chain(contents)
    head = head_of(events)
    removed = data.draw(st.integers(1, len(events)), label="removed from the end")
    kept = events[: len(events) - removed]

    assert verify(kept).ok  # no link inside the chain shows it: only the recorded head does
    result = verify(kept, head=head)

    reason = broken_at(result, len(kept) + 1)
    assert reason.startswith("truncated")
    assert f"records {len(events)} events, found {len(kept)}" in reason
    assert result.count == len(kept)


@given(CONTENTS)
def test_it_catches_a_different_last_event_by_the_head(contents):
    events = build_chain(contents)
    result = verify(events, head=(len(events), "f" * 64))
    assert broken_at(result, len(events)).startswith("head mismatch")


@given(CONTENTS, st.data())
def test_it_reports_a_broken_link_where_prev_hash_was_changed(contents, data):
    events = build_chain(contents)
    index = data.draw(st.integers(0, len(events) - 1), label="index")
    forged = data.draw(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64), label="prev_hash")
    assume(forged != events[index]["prev_hash"])
    events[index] = {**events[index], "prev_hash": forged}

    result = verify(events, head=head_of(events))

    assert broken_at(result, index + 1).startswith("broken link")


@given(CONTENTS, st.data())
def test_it_reports_a_broken_link_after_an_event_rehashed_by_the_forger(contents, data):
    # Someone who edits an event and recomputes its hash still breaks the next event's link.
    events = build_chain(contents)
    assume(len(events) >= 2)
    index = data.draw(st.integers(0, len(events) - 2), label="index")
    forged = {**events[index], "action": events[index]["action"] + "!"}
    forged["hash"] = event_hash(forged)
    events[index] = forged

    result = verify(events)

    assert broken_at(result, index + 2).startswith("broken link")


# --- the encoding --------------------------------------------------------------------------------------------


@given(TIMES, OFFSETS)
def test_it_hashes_the_instant_not_the_time_zone_it_is_written_in(at, offset):
    fields = build_chain([{**dict.fromkeys(CONTENT, ""), "at": at, "data": {}}])[0]
    assert event_hash({**fields, "at": at.astimezone(offset)}) == fields["hash"]
    assert format_time(at).endswith("+00:00")


@given(st.dictionaries(st.text(), JSON, max_size=6))
def test_it_encodes_json_whatever_the_key_order(value):
    assert canonical_json(dict(reversed(value.items()))) == canonical_json(value)


def test_it_encodes_json_compact_sorted_and_unescaped():
    assert canonical_json({"b": 1, "a": ["é", None]}) == '{"a":["é",null],"b":1}'


@pytest.mark.parametrize("value", [0.25, math.nan, math.inf, {"nested": [1, -0.0]}, [(1e16,)]])
def test_it_rejects_floats_which_do_not_round_trip(value):
    with pytest.raises(ValueError, match="no floats"):
        canonical_json(value)


def test_it_rejects_values_json_has_no_spelling_for():
    with pytest.raises(TypeError):
        canonical_json({"ids": {1, 2}})


def test_it_refuses_to_hash_nan_in_data():
    fields = {**dict.fromkeys(CONTENT, ""), "at": datetime(2026, 1, 1, tzinfo=UTC), "data": {"x": math.nan}}
    with pytest.raises(ValueError, match="no floats"):
        event_hash({**fields, "seq": 1, "prev_hash": GENESIS_HASH})


def test_it_refuses_naive_times():
    naive = datetime(2026, 1, 1, 12, 0)  # noqa: DTZ001 - the point of the test
    with pytest.raises(ValueError, match="timezone-aware"):
        format_time(naive)
    fields = {**dict.fromkeys(CONTENT, ""), "at": naive, "data": {}, "seq": 1, "prev_hash": GENESIS_HASH}
    with pytest.raises(ValueError, match="timezone-aware"):
        event_hash(fields)


def test_it_writes_times_in_utc_with_microseconds():
    at = datetime(2026, 3, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert format_time(at) == "2026-02-28T23:30:00.000000+00:00"
