"""Background bookkeeping for tenancy."""

from datetime import datetime

from celery import shared_task

from tenancy.services import api_key_mark_used


@shared_task
def api_key_touch(key_id: int, at: str) -> bool:
    """Record an API key's last use; queued by authentication so requests never wait on the write."""
    return api_key_mark_used(key_id=key_id, at=datetime.fromisoformat(at))
