"""Housekeeping for the API."""

from celery import shared_task

from api.idempotency import idempotency_purge


@shared_task
def idempotency_purge_expired() -> int:
    """Drop Idempotency-Key records past their 24-hour window (Celery beat, hourly)."""
    return idempotency_purge()
