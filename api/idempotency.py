"""``Idempotency-Key`` on POST: the same key and body replay the stored response for 24 hours; the same key
with a different body (or on another endpoint) is refused with 422 ``idempotency_conflict``.

The record is claimed before the view runs (a unique row per scope and key), so two concurrent requests with
one key never both run: the second gets 409 ``idempotency_in_progress``. A claim whose request died is taken
over after ``IN_PROGRESS_TIMEOUT``. 5xx responses are not stored, so the client may retry them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from api.models import IdempotencyRecord

REPLAY_WINDOW = timedelta(hours=24)
IN_PROGRESS_TIMEOUT = timedelta(minutes=5)
MAX_KEY_LENGTH = 255


def fingerprint(method: str, path: str, data: Any) -> str:
    # Not canonical_json: that one refuses floats (they do not round-trip through jsonb), but a body may carry
    # one and must then reach the view's validation, not fail here. Python spells a float the same way each time.
    # Keyed (HMAC with SECRET_KEY): a body may carry a secret's value, and a plain hash of it, kept a day, could be
    # guessed back by whoever reads the table.
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    key = hashlib.sha256(f"idempotency:{settings.SECRET_KEY}".encode()).digest()
    return hmac.new(key, f"{method} {path}\n{body}".encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Claim:
    """What to do with a request: run it (``record`` is ours to finish) or replay a stored response."""

    record: IdempotencyRecord
    replay: bool


class IdempotencyConflict(Exception):
    pass


class IdempotencyInProgress(Exception):
    pass


def _stale(record: IdempotencyRecord, now: datetime) -> bool:
    if record.created_at <= now - REPLAY_WINDOW:
        return True
    return record.status_code is None and record.created_at <= now - IN_PROGRESS_TIMEOUT


def idempotency_claim(*, scope: str, key: str, fingerprint: str) -> Claim:
    now = timezone.now()
    for _ in range(3):
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(scope=scope, key=key, fingerprint=fingerprint)
            return Claim(record, replay=False)
        except IntegrityError:
            existing = IdempotencyRecord.objects.filter(scope=scope, key=key).first()
            if existing is None:
                continue  # purged between our insert and read; try again
        if _stale(existing, now):
            # Compare-and-swap on created_at: only one of several racing requests takes the stale claim over.
            IdempotencyRecord.objects.filter(pk=existing.pk, created_at=existing.created_at).delete()
            continue
        if existing.fingerprint != fingerprint:
            raise IdempotencyConflict
        if existing.status_code is None:
            raise IdempotencyInProgress
        return Claim(existing, replay=True)
    raise IdempotencyInProgress


def idempotency_finish(*, record: IdempotencyRecord, status_code: int, body: Any, content_type: str) -> None:
    if status_code >= 500:
        IdempotencyRecord.objects.filter(pk=record.pk).delete()
        return
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        status_code=status_code, response_body=body, content_type=content_type
    )


def idempotency_purge(*, now: datetime | None = None) -> int:
    """Delete records past the replay window."""
    cutoff = (now or timezone.now()) - REPLAY_WINDOW
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lte=cutoff).delete()
    return deleted
