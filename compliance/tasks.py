"""Scheduled checks of the audit log."""

import logging

from celery import shared_task

from compliance.selectors import audit_chain_verify

log = logging.getLogger(__name__)


@shared_task
def audit_verify_scheduled() -> bool:
    """Verify the chain (Celery beat); a broken chain is logged at CRITICAL for the on-call to see."""
    result = audit_chain_verify()
    if result.ok:
        log.info(result.describe())
    else:
        log.critical(result.describe())
    return result.ok
