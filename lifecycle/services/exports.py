"""Finance exports, where billing meets compliance: FOCUS rows from the ledger (``billing.selectors.exports``)
written to CSV
or Parquet (``billing.domain.focus_files``) and signed with the audit signing key (``compliance.signing``), with the
detached signature ``FILE.sig.json`` that ``python -m compliance.domain.verify_export`` checks offline.

Used by ``manage.py billing_export``, by ``GET /api/v1/finance/exports`` (a small range, streamed from a temporary
file) and by export jobs (``POST``; the task ``lifecycle.tasks.export_job_run`` writes to ``LADDER_EXPORT_DIR``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from billing.domain import focus, focus_files
from billing.domain.metering import to_ms
from billing.models import ExportJob
from billing.selectors import exports
from billing.services import exports as jobs
from compliance.domain.verify_export import SIGNATURE_FORMAT, SIGNATURE_VERSION, export_payload
from compliance.signing import audit_signer
from core.actor import Actor
from core.errors import Invalid
from core.tasks import enqueue
from tenancy.models import Tenant


@dataclass(frozen=True)
class ExportSpec:
    """What to export: UTC days ``date_from`` to ``date_to`` inclusive, one tenant or all, summary or detail."""

    date_from: date
    date_to: date
    tenant: Tenant | None
    detail: bool
    file_format: str

    @property
    def days(self) -> int:
        return (self.date_to - self.date_from).days + 1

    def range_ms(self) -> tuple[int, int]:
        first = datetime.combine(self.date_from, time(0), tzinfo=UTC)
        stop = datetime.combine(self.date_to + timedelta(days=1), time(0), tzinfo=UTC)
        return to_ms(first), to_ms(stop)

    @property
    def file_name(self) -> str:
        scope = self.tenant.slug if self.tenant else "all"
        kind = "detail" if self.detail else "summary"
        extension = "csv" if self.file_format == "csv" else "parquet"
        return f"ladder-focus-{scope}-{kind}-{self.date_from}-{self.date_to}.{extension}"

    @property
    def inline_max_days(self) -> int:
        if self.tenant is None:
            return int(settings.LADDER_EXPORT_INLINE_MAX_DAYS_ALL_TENANTS)
        return int(settings.LADDER_EXPORT_INLINE_MAX_DAYS)


def _day(value: str | date, name: str) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value.strip())
    except (ValueError, AttributeError):
        raise Invalid("validation_error", f"{value!r} is not a date (YYYY-MM-DD).", field=name) from None


def export_spec(
    *, date_from: str | date, date_to: str | date, tenant: str | None, detail: bool, file_format: str
) -> ExportSpec:
    """Check an export's parameters; each refusal names its field (``from``, ``to``, ``tenant``, ``format``)."""
    first, last = _day(date_from, "from"), _day(date_to, "to")
    if first > last:
        raise Invalid("validation_error", f"from ({first}) is after to ({last}); to is inclusive.", field="to")
    if file_format not in focus_files.FORMATS:
        raise Invalid("validation_error", f"format must be one of {', '.join(focus_files.FORMATS)}.", field="format")
    found = None
    if tenant:
        found = Tenant.objects.filter(slug=tenant).first()
        if found is None:
            raise Invalid("validation_error", f"No tenant has the slug {tenant!r}.", field="tenant")
    return ExportSpec(first, last, found, bool(detail), file_format)


def export_workers() -> int:
    """How many processes write a large export: ``LADDER_EXPORT_WORKERS``, 0 for one per CPU this process may
    use."""
    return int(settings.LADDER_EXPORT_WORKERS) or len(os.sched_getaffinity(0))


def export_write(*, spec: ExportSpec, path: Path, now: datetime | None = None, workers: int = 1) -> dict[str, Any]:
    """Write the export to ``path`` and its signature beside it (``path`` + ``.sig.json``); returns the signature.
    Both are written under temporary names and renamed into place, so a reader never sees half a file. ``workers``:
    see ``billing.selectors.exports.write``."""
    first_ms, stop_ms = spec.range_ms()
    partial = path.with_name(path.name + ".part")
    try:
        written = exports.write(
            spec.file_format,
            str(partial),
            first_ms=first_ms,
            stop_ms=stop_ms,
            tenant_id=spec.tenant.pk if spec.tenant else None,
            detail=spec.detail,
            workers=workers,
        )
        signer = audit_signer()
        fields: dict[str, Any] = {
            "format": SIGNATURE_FORMAT,
            "version": SIGNATURE_VERSION,
            "file": path.name,
            "file_format": spec.file_format,
            "sha256": written.sha256,
            "bytes": written.bytes,
            "rows": written.rows,
            "from": spec.date_from.isoformat(),
            "to": spec.date_to.isoformat(),
            "tenant": spec.tenant.slug if spec.tenant else None,
            "detail": spec.detail,
            "focus_version": focus.FOCUS_VERSION,
            "signed_at": (now or timezone.now()).astimezone(UTC).isoformat(),
            "key_id": signer.key_id,
        }
        signature = {**fields, "public_key": signer.public_key_pem, "signature": signer.sign(export_payload(fields))}
        signature_path = path.with_name(path.name + ".sig.json")
        signature_path.with_name(signature_path.name + ".part").write_text(json.dumps(signature, indent=2) + "\n")
        os.replace(partial, path)
        os.replace(signature_path.with_name(signature_path.name + ".part"), signature_path)
    finally:
        partial.unlink(missing_ok=True)
    return signature


def export_job_request(*, spec: ExportSpec, actor: Actor) -> ExportJob:
    """Record the job (audited: ``finance.export_requested``) and queue its task after the commit."""
    job = jobs.export_job_create(
        date_from=spec.date_from,
        date_to=spec.date_to,
        tenant=spec.tenant,
        detail=spec.detail,
        file_format=spec.file_format,
        actor=actor,
        now=timezone.now(),
    )
    enqueue("lifecycle.tasks.export_job_run", job.pk)
    return job


def export_job_path(job: ExportJob) -> Path:
    """A folder per job, the file under the name that says what it holds (the name a download suggests)."""
    spec = ExportSpec(job.date_from, job.date_to, job.tenant, job.detail, job.file_format)
    return Path(settings.LADDER_EXPORT_DIR) / f"export-{job.pk}" / spec.file_name


def export_job_run(*, job_id: int) -> str:
    """Write and sign a pending job's export; a job another run claimed is left alone."""
    if not jobs.export_job_start(job_id=job_id):
        return f"export {job_id}: not pending"
    job = ExportJob.objects.select_related("tenant").get(pk=job_id)
    spec = ExportSpec(job.date_from, job.date_to, job.tenant, job.detail, job.file_format)
    path = export_job_path(job)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Inline (make run), the job runs on a thread of the web server, which is not forked.
        workers = 1 if settings.LADDER_TASKS_INLINE else export_workers()
        signature = export_write(spec=spec, path=path, workers=workers)
    except Exception as error:
        jobs.export_job_fail(job_id=job_id, error=f"{type(error).__name__}: {error}", now=timezone.now())
        raise
    jobs.export_job_finish(
        job_id=job_id,
        rows=signature["rows"],
        sha256=signature["sha256"],
        path=str(path),
        signature=signature,
        now=timezone.now(),
    )
    return f"export {job_id}: {signature['rows']} rows"
