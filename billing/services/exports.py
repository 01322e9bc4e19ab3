"""Writes of export jobs: a finance user asks for one (audited), a worker starts it, and it ends done or failed.
Each step moves the state by compare-and-swap, so a job runs once however often its task is delivered."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django.db import transaction

from billing.models import ExportJob, ExportState
from core.actor import Actor
from core.audit import audit_record
from tenancy.models import Tenant


def export_job_create(
    *,
    date_from: date,
    date_to: date,
    tenant: Tenant | None,
    detail: bool,
    file_format: str,
    actor: Actor,
    now: datetime,
) -> ExportJob:
    with transaction.atomic():
        job = ExportJob.objects.create(
            tenant=tenant,
            date_from=date_from,
            date_to=date_to,
            detail=detail,
            file_format=file_format,
            requested_by=actor.label[:150],
            created_at=now,
        )
        audit_record(
            actor=actor,
            action="finance.export_requested",
            target_type="export_job",
            target_id=job.pk,
            tenant=tenant,
            data={
                "from": date_from.isoformat(),
                "to": date_to.isoformat(),
                "tenant": tenant.slug if tenant else None,
                "detail": detail,
                "format": file_format,
            },
        )
    return job


def export_job_start(*, job_id: int) -> bool:
    """Claim a pending job for this run; False when another run has it (or it is over)."""
    return bool(ExportJob.objects.filter(pk=job_id, state=ExportState.PENDING).update(state=ExportState.RUNNING))


def export_job_finish(
    *, job_id: int, rows: int, sha256: str, path: str, signature: dict[str, Any], now: datetime
) -> None:
    ExportJob.objects.filter(pk=job_id, state=ExportState.RUNNING).update(
        state=ExportState.DONE, rows=rows, sha256=sha256, path=path, signature=signature, finished_at=now
    )


def export_job_fail(*, job_id: int, error: str, now: datetime) -> None:
    ExportJob.objects.filter(pk=job_id, state=ExportState.RUNNING).update(
        state=ExportState.FAILED, error=error[:2000], finished_at=now
    )
