"""What the fault run checks after each fault, as pure functions over what was recorded (no Django, no I/O).

- ``readiness``: ``/readyz`` polled through the fault. For a fault of something it checks (the database, the
  broker) it must have answered something other than 200 while the fault lasted, and 200 again after; for anything
  else (a worker, Stripe) it must have stayed 200 throughout.
- ``errors_outside``: the 5xx answers and failed connections the clients saw (the locustfile's journal) that began
  after the service was back, or ended before the fault began. For a fault the API does not depend on, every
  one counts.
- ``allocations``: every allocation a client was told was placed exists, holding the devices the answer named;
  every one it was told was stopping is stopping or stopped; no GPU is held by two live allocations.
- ``stripe_matches_ledger``: as reconciliation compares them (``billing/domain/reconcile.py``, links 1 and 2): every
  rollup was sent (none pending, failed or stale), Stripe's meters hold exactly what the outbox marked sent per
  customer and meter, and every rollup's event is in Stripe once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    fault: str
    name: str
    ok: bool
    detail: str


def readiness(
    polls: Sequence[tuple[float, int]], began: float, back: float | None, *, expect_unready: bool
) -> tuple[bool, str]:
    """``polls``: (time, status) of ``/readyz``; the fault lasted from ``began`` to ``back`` (when ``/readyz`` was 200
    again; None: it never was)."""
    during = [s for t, s in polls if began <= t <= (back if back is not None else float("inf"))]
    unready = sum(1 for s in during if s != 200)
    after = [s for t, s in polls if back is not None and t > back]
    if back is None:
        return False, "never ready again"
    if expect_unready:
        if not unready:
            return False, f"stayed 200 through the fault ({len(during)} polls)"
        if after and after[-1] != 200:
            return False, f"answered {after[-1]} at the end"
        statuses = sorted({s for _, s in polls if began <= _ <= back and s != 200})
        return True, f"{unready} of {len(during)} polls not ready ({', '.join(map(str, statuses))}), ready again"
    bad = [s for _, s in polls if s != 200]
    if bad:
        return False, f"{len(bad)} polls not 200 ({sorted(set(bad))}) for a fault it does not check"
    return True, f"200 in all {len(polls)} polls (it does not depend on this)"


def errors_outside(
    errors: Iterable[Mapping[str, Any]], began: float, back: float | None, *, api_depends: bool
) -> tuple[bool, str]:
    """Server errors outside ``[began, back]``; every one when the API does not depend on what failed."""
    outside: Counter[str] = Counter()
    inside = 0
    for error in errors:
        ended = float(error["t"])
        started = ended - float(error.get("ms") or 0) / 1000
        if api_depends and back is not None and started <= back and ended >= began:
            inside += 1
            continue
        outside[f"{error['name']} {error.get('status') or error.get('error', '')}"] += 1
    if outside:
        shown = ", ".join(f"{what} x{n}" for what, n in outside.most_common(4))
        return False, f"{sum(outside.values())} outside the window: {shown}"
    return True, f"none outside ({inside} during the fault)"


def allocations(
    placed: Mapping[int, list[list[Any]]],
    stopped: Iterable[int],
    found: Mapping[int, tuple[str, list[list[Any]]]],
    doubly_held: Sequence[str],
) -> tuple[bool, str]:
    """``placed``: id -> devices the answer named; ``found``: id -> (state, devices) in the database."""
    lost = [i for i in placed if i not in found]
    moved = [i for i, devices in placed.items() if i in found and sorted(devices) != sorted(found[i][1])]
    not_stopped = [i for i in stopped if i in found and found[i][0] not in ("stopping", "stopped")]
    problems = []
    if lost:
        problems.append(f"{len(lost)} lost (e.g. {lost[:3]})")
    if moved:
        problems.append(f"{len(moved)} not on the devices named (e.g. {moved[:3]})")
    if not_stopped:
        problems.append(f"{len(not_stopped)} told stopping but {found[not_stopped[0]][0]} (e.g. {not_stopped[:3]})")
    if doubly_held:
        problems.append(f"GPUs held twice: {', '.join(doubly_held[:5])}")
    if problems:
        return False, "; ".join(problems)
    return True, f"{len(placed)} placed as told, {len(list(stopped))} stopped as told, no GPU held twice"


def stripe_matches_ledger(
    states: Mapping[str, int],
    sent: Mapping[str, int],
    meters: Mapping[str, int],
    identifiers: Sequence[str],
    events: Sequence[str],
) -> tuple[bool, str]:
    """``states``: rollups per push state; ``sent``: the outbox's sent meter values per ``customer|event name``;
    ``meters``: what Stripe's meters hold for the same keys; ``identifiers``: the sent rollups' event identifiers;
    ``events``: the identifiers of the events Stripe holds."""
    problems = []
    waiting = {s: n for s, n in states.items() if s not in ("sent", "nothing") and n}
    if waiting:
        problems.append(f"rollups not sent: {waiting}")
    differ = {
        k: (sent.get(k, 0), meters.get(k, 0)) for k in set(sent) | set(meters) if sent.get(k, 0) != meters.get(k, 0)
    }
    if differ:
        problems.append(f"{len(differ)} meters differ from the ledger (ledger, Stripe): {list(differ.items())[:3]}")
    counts = Counter(events)
    twice = [i for i, n in counts.items() if n > 1]
    missing = [i for i in identifiers if i not in counts]
    if twice:
        problems.append(f"{len(twice)} events in Stripe more than once")
    if missing:
        problems.append(f"{len(missing)} sent rollups missing in Stripe")
    if problems:
        return False, "; ".join(problems)
    return True, f"{len(identifiers)} rollups sent once each; {sum(meters.values()):,} unit-seconds in Stripe = ledger"


def journal(lines: Iterable[str]) -> tuple[dict[int, list[list[Any]]], list[int], list[dict[str, Any]]]:
    """The locustfile's journal: (placed id -> devices, stopped ids, errors)."""
    placed: dict[int, list[list[Any]]] = {}
    stopped: list[int] = []
    errors: list[dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        if record["kind"] == "placed":
            placed[int(record["id"])] = record["devices"]
        elif record["kind"] == "stopped":
            stopped.append(int(record["id"]))
        elif record["kind"] == "error":
            errors.append(record)
    return placed, stopped, errors
