"""The finance console: revenue and gross margin per rung (with charts) and of storage, tenants against their
budgets, the month's reconciliation with Stripe (start a run, read its differences and their causes), and the pushes
Stripe refused, with Stripe's message and a retry. Finance reads every tenant's billing and changes no tenant's
data; every action calls the service the API calls."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils import timezone

from billing.domain.margin import MarginReport
from billing.domain.metering import from_ms
from billing.models import ExportJob, ExportState, ReconciliationRun, UsageRollup
from billing.selectors import budgets_standing, margin_report
from billing.services.reconcile import (
    reconciliation_run_start,
    retry_refusal,
    usage_rollup_retry,
    usage_rollups_needing_a_person,
)
from core.domain.months import MonthError, month_range, month_text
from core.errors import ServiceError
from lifecycle.services.exports import export_job_request, export_spec
from portal.consoles.forms import ExportForm, MonthRangeForm, ReconcileForm, RetryForm
from portal.consoles.frame import Console, Page, actor, already_done, mark_done, register, staff_page
from portal.forms import error_onto
from tenancy.domain.roles import StaffPermission
from tenancy.models import Tenant
from tenancy.selectors import staff_may

CONSOLE = register(
    Console(
        name="finance",
        title="Finance console",
        permission=StaffPermission.USAGE_VIEW,
        pages=(
            Page("console_margin", "Revenue and margin", StaffPermission.USAGE_VIEW),
            Page("console_budgets", "Budgets", StaffPermission.USAGE_VIEW),
            Page("console_reconciliation", "Reconciliation", StaffPermission.RECONCILIATION_VIEW),
            Page("console_pushes", "Failed pushes", StaffPermission.USAGE_VIEW),
            Page("console_exports", "Exports", StaffPermission.USAGE_VIEW),
        ),
    )
)
FLEET_PARTS = ("billed", "idle", "stranded", "unbilled")


def _charts(report: MarginReport) -> dict[str, Any]:
    """What the page's two charts draw: revenue against allocated cost per rung, and where the fleet's cost went per
    month (billed, idle, stranded, held unbilled). Money as strings, to the cent; the script draws numbers."""
    by_rung: dict[str, dict[str, Decimal]] = defaultdict(lambda: {"revenue": Decimal(0), "cost": Decimal(0)})
    for row in report.rungs:
        by_rung[row.rung]["revenue"] += row.revenue
        by_rung[row.rung]["cost"] += row.allocated_cost
    by_month: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for cap in report.capacity:
        month = by_month[cap.month]
        month["billed"] += cap.allocated_cost
        month["idle"] += cap.idle_cost
        month["stranded"] += cap.stranded_cost
        month["unbilled"] += cap.unbilled_cost

    def cents(value: Decimal) -> str:
        return str(value.quantize(Decimal("0.01")))

    rungs = sorted(by_rung)
    months = sorted(by_month)
    return {
        "rungs": rungs,
        "revenue": [cents(by_rung[r]["revenue"]) for r in rungs],
        "cost": [cents(by_rung[r]["cost"]) for r in rungs],
        "months": months,
        "fleet": {part: [cents(by_month[m][part]) for m in months] for part in FLEET_PARTS},
    }


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW)
def margin(request: HttpRequest) -> HttpResponse:
    """Revenue, allocated cost and gross margin per rung, model and region, the cost of idle and stranded capacity,
    and storage's revenue, cost and margin per region and kind, for a range of months (this month by default);
    docs/finance.md says where each figure comes from."""
    now = timezone.now()
    form = MonthRangeForm(request.GET or None)
    since = until = month_text(now)
    report = MarginReport()
    if not form.is_bound or form.is_valid():
        data = form.cleaned_data if form.is_bound else {}
        try:
            months = month_range(data.get("since"), data.get("until"), default=now, fields=("since", "until"))
        except MonthError as error:
            error_onto(form, error)
        else:
            since, until = months.labels
            report = margin_report(start=months.start, end=months.end, now=now)
    status = 422 if form.errors else 200
    context = {
        "form": form,
        "since": since,
        "until": until,
        "report": report,
        "totals": sorted(report.totals().items()),
        "storage_uncosted": any(row.uncosted_gb_hours for row in report.storage),
        "chart": _charts(report),
    }
    return render(request, "consoles/finance/margin.html", context, status=status)


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW)
def budgets(request: HttpRequest) -> HttpResponse:
    """Every tenant with a monthly budget and this month's spend against it, those over it first."""
    rows = budgets_standing(now=timezone.now())
    return render(request, "consoles/finance/budgets.html", {"rows": rows, "over": sum(1 for r in rows if r.over)})


def _tenant_choices() -> list[tuple[str, str]]:
    return [(slug, f"{name} ({slug})") for slug, name in Tenant.objects.order_by("slug").values_list("slug", "name")]


@staff_page(CONSOLE, StaffPermission.RECONCILIATION_VIEW, acting=StaffPermission.RECONCILIATION_START)
def reconciliation(request: HttpRequest) -> HttpResponse:
    """The runs (newest first) and one run's differences with their causes (``?run=<id>``, the newest by default);
    starting a run for a month (and a tenant) calls the service the API's POST calls."""
    tenants = _tenant_choices()
    form = ReconcileForm(tenants=tenants, initial={"month": month_text(timezone.now())})
    if request.method == "POST":
        done = already_done(request)
        if done:
            return redirect(done)
        form = ReconcileForm(request.POST, tenants=tenants)
        if form.is_valid():
            slug = form.cleaned_data["tenant"]
            tenant = Tenant.objects.filter(slug=slug).first() if slug else None
            try:
                run, started = reconciliation_run_start(
                    month=form.cleaned_data["month"], tenant=tenant, actor=actor(request)
                )
            except ServiceError as error:
                error_onto(form, error)
            else:
                where = reverse("portal:console_reconciliation") + f"?run={run.pk}"
                mark_done(request, where)
                if started:
                    messages.success(request, f"The reconciliation of {run.month} is {run.state}.")
                else:
                    messages.success(request, f"A reconciliation of {run.month} is running already.")
                return redirect(where)
    runs = list(ReconciliationRun.objects.select_related("tenant")[:50])
    chosen = request.GET.get("run")
    shown = None
    if chosen and chosen.isdigit():
        shown = get_object_or_404(ReconciliationRun.objects.select_related("tenant"), pk=int(chosen))
    elif runs:
        shown = runs[0]
    context = {
        "form": form,
        "runs": runs,
        "shown": shown,
        "may_start": staff_may(request.user, StaffPermission.RECONCILIATION_START),
    }
    return render(request, "consoles/finance/reconciliation.html", context, status=422 if form.errors else 200)


def _push_rows(now: datetime) -> list[dict[str, Any]]:
    return [
        {
            "row": row,
            "window": from_ms(row.window_ms),
            "refusal": retry_refusal(row, now),
            "form": RetryForm(prefix=f"r{row.pk}"),
        }
        for row in usage_rollups_needing_a_person()[:200]
    ]


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW, acting=StaffPermission.PUSH_RETRY)
def pushes(request: HttpRequest) -> HttpResponse:
    """Usage Stripe refused (with its message) or that came too late for it; a failed one goes back to the outbox
    with Retry (the service the API's retry calls: audited, once)."""
    if request.method == "POST":
        row = get_object_or_404(UsageRollup, pk=request.POST.get("rollup", ""))
        done = already_done(request, prefix=f"r{row.pk}")
        if done:
            return redirect(done)
        form = RetryForm(request.POST, prefix=f"r{row.pk}")
        where = reverse("portal:console_pushes")
        if form.is_valid():
            try:
                row = usage_rollup_retry(rollup_id=row.pk, actor=actor(request))
            except ServiceError as error:
                messages.error(request, f"Push {row.pk} was not retried: {error.detail}")
            else:
                mark_done(request, where, prefix=f"r{row.pk}")
                messages.success(request, f"Push {row.pk} ({row.sku.code}) is back in the outbox: {row.push_state}.")
        else:
            messages.error(request, "This form is out of date: send it again.")
        return redirect(where)
    context = {"rows": _push_rows(timezone.now()), "may_retry": staff_may(request.user, StaffPermission.PUSH_RETRY)}
    return render(request, "consoles/finance/pushes.html", context)


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW)
def exports(request: HttpRequest) -> HttpResponse:
    """FOCUS exports (docs/finance.md): a range of days, one tenant or all, summary or per allocation, CSV or
    Parquet, written and signed by an export job (the service the API's POST calls, audited
    ``finance.export_requested``); the jobs with their file and signature to download."""
    tenants = _tenant_choices()
    today = timezone.now().date()
    form = ExportForm(tenants=tenants, initial={"date_from": today.replace(day=1), "date_to": today})
    if request.method == "POST":
        done = already_done(request)
        if done:
            return redirect(done)
        form = ExportForm(request.POST, tenants=tenants)
        if form.is_valid():
            data = form.cleaned_data
            try:
                spec = export_spec(
                    date_from=data["date_from"],
                    date_to=data["date_to"],
                    tenant=data["tenant"] or None,
                    detail=data["detail"],
                    file_format=data["file_format"],
                )
                job = export_job_request(spec=spec, actor=actor(request))
            except ServiceError as error:
                error_onto(form, error, {"from": "date_from", "to": "date_to", "format": "file_format"})
            else:
                where = reverse("portal:console_exports") + f"#export-{job.pk}"
                mark_done(request, where)
                messages.success(request, f"Export {job.pk} ({spec.file_name}) is requested.")
                return redirect(where)
    jobs = list(ExportJob.objects.select_related("tenant")[:50])
    context = {"form": form, "jobs": jobs}
    return render(request, "consoles/finance/exports.html", context, status=422 if form.errors else 200)


def _done_job(job_id: int) -> tuple[ExportJob, dict[str, Any]]:
    job = get_object_or_404(ExportJob, pk=job_id)
    if job.state != ExportState.DONE or not job.signature:
        raise Http404(f"Export {job.pk} is {job.state}.")
    return job, job.signature


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW)
def export_file(request: HttpRequest, job_id: int) -> FileResponse:
    job, signature = _done_job(job_id)
    path = Path(job.path)
    if not path.is_file():
        raise Http404(f"The file of export {job.pk} is no longer there.")
    return FileResponse(path.open("rb"), as_attachment=True, filename=str(signature["file"]))


@staff_page(CONSOLE, StaffPermission.USAGE_VIEW)
def export_signature(request: HttpRequest, job_id: int) -> JsonResponse:
    _, signature = _done_job(job_id)
    answer = JsonResponse(signature, json_dumps_params={"indent": 2})
    answer["Content-Disposition"] = f'attachment; filename="{signature["file"]}.sig.json"'
    return answer


urlpatterns = [
    path("console/finance/", margin, name="console_margin"),
    path("console/finance/budgets", budgets, name="console_budgets"),
    path("console/finance/reconciliation", reconciliation, name="console_reconciliation"),
    path("console/finance/pushes", pushes, name="console_pushes"),
    path("console/finance/exports", exports, name="console_exports"),
    path("console/finance/exports/<int:job_id>/file", export_file, name="console_export_file"),
    path("console/finance/exports/<int:job_id>/signature", export_signature, name="console_export_signature"),
]
