"""How callers are counted: the fixed-window counter every rate limit uses, and the one place a client's address is
derived from a request.

A call costs one count on the default cache whatever the rate (one round trip on Redis: ``core.cache``; on the
gateway's hot path one per batch of calls, ``window_take_batched``), and several web processes sharing a Redis cache
count together (the local-memory default counts per process). A caller can burst up
to twice the limit across a window boundary: limits are a guard against runaway callers, not a meter.

An address is what many tenants share when a gateway, a proxy or a NAT stands in front of them, so it keys only
what really is per caller (sign-in failures, anonymous public reads); tenant traffic is counted per tenant and
what it names (an API key, an endpoint, a guest's credential).
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from core.cache import counter_incr


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int  # this call's place in the window
    retry_after: float  # seconds until the window ends


def window_take(key: str, *, limit: int, seconds: int, now: float) -> Verdict:
    """Count one call against ``key``: allowed while the window (``seconds`` long, aligned on the epoch) has seen
    at most ``limit`` calls, this one included."""
    window = int(now // seconds)
    count = counter_incr(f"{key}:{window}", timeout=seconds + 1)
    return Verdict(allowed=count <= limit, count=count, retry_after=(window + 1) * seconds - now)


@dataclass
class _Batch:
    window: int
    known: int = 0  # the shared count as last read
    pending: int = 0  # this process's calls not added to it yet
    synced_at: float = 0.0


_batches: dict[str, _Batch] = {}
_batches_lock = threading.Lock()
BATCH_CALLS = 32  # a process adds its calls to the shared count at least every this many calls...
BATCH_SECONDS = 0.1  # ...and this often; within BATCH_CALLS of the limit, at every call


def batches_clear() -> None:
    """Forget this process's uncounted calls (a test's clock and database start over)."""
    with _batches_lock:
        _batches.clear()


def window_take_batched(key: str, *, limit: int, seconds: int, now: float) -> Verdict:
    """``window_take`` for a hot path: each process counts its calls itself and adds them to the shared count in
    batches (every ``BATCH_CALLS`` calls or ``BATCH_SECONDS``), so most calls cost no round trip; within
    ``BATCH_CALLS`` of the limit it adds every call, so a process alone never lets one through past the limit.
    Several processes together may let through up to ``BATCH_CALLS`` each past it in a window: still a guard, as
    every limit here is."""
    window = int(now // seconds)
    with _batches_lock:
        batch = _batches.get(key)
        if batch is None or batch.window != window:
            if len(_batches) > 10_000:  # windows gone by: dropped rather than kept for ever
                _batches.clear()
            batch = _batches[key] = _Batch(window=window, synced_at=now)
        batch.pending += 1
        count = batch.known + batch.pending
        flush = batch.pending >= BATCH_CALLS or now - batch.synced_at >= BATCH_SECONDS or count > limit - BATCH_CALLS
        taken = batch.pending if flush else 0
        batch.pending -= taken
    if taken:
        total = counter_incr(f"{key}:{window}", timeout=seconds + 1, by=taken)
        with _batches_lock:
            batch.known, batch.synced_at = max(batch.known, total), now
            count = total + batch.pending
    return Verdict(allowed=count <= limit, count=count, retry_after=(window + 1) * seconds - now)


def retry_after_seconds(verdict: Verdict) -> int:
    """``Retry-After`` in whole seconds: never 0, which a client would read as "at once"."""
    return max(math.ceil(verdict.retry_after), 1)


def credential_digest(credential: str) -> str:
    """A short, one-way name for a credential a caller presented, to count its calls without keeping it."""
    return hashlib.sha256(credential.encode()).hexdigest()[:32]


def client_address(request: Any) -> str:
    """The address of whoever sent the request. ``REMOTE_ADDR`` unless ``LADDER_TRUSTED_PROXIES`` says how many
    proxies in front of Ladder each append the address they saw to ``X-Forwarded-For``: then the one the outermost
    of them saw. Entries a client wrote itself come before those and are never believed (a forged header would
    otherwise pick anyone's counter, or a fresh one per request)."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    proxies = settings.LADDER_TRUSTED_PROXIES
    if proxies <= 0:
        return remote
    hops = [hop.strip() for hop in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",") if hop.strip()]
    if not hops:
        return remote
    return hops[-min(proxies, len(hops))]
