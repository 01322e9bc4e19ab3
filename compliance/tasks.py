"""Scheduled checks of the audit log."""

import logging
from typing import Any

from celery import shared_task

from compliance.selectors import audit_chain_verify
from compliance.services.audit import audit_checkpoint_take
from compliance.services.sweep import retention_sweep
from core.metrics import AUDIT_VERIFICATIONS, RETENTION_SWEPT

log = logging.getLogger(__name__)


@shared_task
def audit_verify_scheduled() -> bool:
    """Verify the chain (Celery beat); a broken chain is logged at CRITICAL for the on-call to see."""
    result = audit_chain_verify()
    AUDIT_VERIFICATIONS.labels("ok" if result.ok else "broken").inc()
    if result.ok:
        log.info(result.describe())
    else:
        log.critical(result.describe())
    return result.ok


@shared_task
def audit_checkpoint_scheduled() -> int | None:
    """Sign the chain head (Celery beat); returns the seq signed (None while the log is empty)."""
    checkpoint = audit_checkpoint_take()
    if checkpoint is not None:
        log.info("audit checkpoint at seq %s (key %s)", checkpoint.seq, checkpoint.key_id)
    return checkpoint.seq if checkpoint is not None else None


@shared_task
def retention_sweep_scheduled() -> dict[str, Any]:
    """Apply retention, end waiting periods and finish closures (Celery beat, daily)."""
    report = retention_sweep()
    for action, count in report.counts().items():
        RETENTION_SWEPT.labels(action).inc(count)
    log.info("retention sweep: %s", report.as_dict())
    return report.as_dict()
