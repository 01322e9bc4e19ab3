"""The operator console: the fleet as a heatmap, a node's page (its GPUs, versions, diagnosis by layer, and drain,
undrain, quarantine with a reason after a confirmation), fragmentation and the defragmentation plan (a dry run, and
starting a run), version skew within each NVLink domain, each region's storage per class (volumes and snapshots),
serverless endpoints' cold starts (P50/P90/P99 per endpoint), and tenants' limits (GPU quota, endpoint calls a
minute, storage quota). Every action calls the service the API calls."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils import timezone

from core.errors import ServiceError
from core.prometheus import PrometheusUnavailable
from lifecycle.metering_check import metering_check as unreported_usage
from portal.cold_starts import CONSOLE_DAYS, console_cold_starts
from portal.consoles.fleet_map import PALETTE, STATES, fleet_map
from portal.consoles.forms import DefragmentStartForm, QuotaForm, ReasonForm
from portal.consoles.frame import Console, Page, actor, already_done, mark_done, register, staff_page
from portal.forms import error_onto
from provisioning.domain.states import HOLDS_DEVICES
from provisioning.drivers.kubernetes.clusters import node_diagnosis
from provisioning.fleet_cache import fleet_read
from provisioning.gpu_faults import gpu_errors
from provisioning.models import Allocation, DefragmentRun, Node
from provisioning.selectors import (
    STORAGE_CLASSES,
    VERSION_FIELDS,
    allocations_on,
    fragmentation_figures,
    storage_figures,
    version_skew,
    volumes_counted_gb,
)
from provisioning.services import fleet as fleet_services
from provisioning.services.defragment import defragment_plan, defragment_start, plan_moves
from provisioning.telemetry import fleet_sm_active, held_gpu_hours
from tenancy.domain.roles import StaffPermission
from tenancy.models import Tenant
from tenancy.selectors import endpoint_calls_per_minute, staff_may
from tenancy.services import tenant_set_quota

CONSOLE = register(
    Console(
        name="operators",
        title="Operator console",
        permission=StaffPermission.NODE_VIEW,
        pages=(
            Page("console_fleet", "Fleet", StaffPermission.NODE_VIEW),
            Page("console_defragment", "Fragmentation", StaffPermission.NODE_VIEW),
            Page("console_skew", "Version skew", StaffPermission.NODE_VIEW),
            Page("console_storage", "Storage", StaffPermission.NODE_VIEW),
            Page("console_cold_starts", "Cold starts", StaffPermission.NODE_VIEW),
            Page("console_idle_gpus", "Billed but idle", StaffPermission.NODE_VIEW),
            Page("console_metering_check", "Metering check", StaffPermission.NODE_VIEW),
            Page("console_quotas", "Quotas", StaffPermission.TENANT_QUOTA_SET),
        ),
    )
)
CHANGE_NODE = StaffPermission.NODE_CHANGE
NODE_ACTIONS: dict[str, tuple[str, Callable[..., Node]]] = {
    "drain": ("Drain", fleet_services.node_drain),
    "undrain": ("Undrain", fleet_services.node_undrain),
    "quarantine": ("Quarantine", fleet_services.node_quarantine),
}


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def fleet(request: HttpRequest) -> HttpResponse:
    """The heatmap, coloured by tenant (default), by node state (``?colour=state``) or by what the GPUs do
    (``?colour=activity``: SM active over the last five minutes, from DCGM through Prometheus)."""
    asked = request.GET.get("colour")
    colour = asked if asked in ("state", "activity") else "tenant"
    activity, unavailable = None, None
    if colour == "activity":
        try:
            activity = fleet_sm_active(now=timezone.now())
        except PrometheusUnavailable as error:
            unavailable = str(error)
    drawn = fleet_map(activity)
    context = {
        "unavailable": unavailable,
        "map": drawn,
        "partly": drawn.counts["partly used"],
        "colour": colour,
        "states": STATES,
        "palette": range(PALETTE),
    }
    return render(request, "consoles/operators/fleet.html", context)


def _node(node_id: int) -> Node:
    return get_object_or_404(
        Node.objects.select_related("hall__region", "gpu_model").prefetch_related("gpus"), pk=node_id
    )


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def node(request: HttpRequest, node_id: int) -> HttpResponse:
    """A node: where it is, its state, versions and GPUs, what runs there, and (``?diagnose=1``) why Kubernetes may
    not offer its GPUs, layer by layer, read from its hall's cluster, with its GPUs' last XIDs from DCGM."""
    found = _node(node_id)
    diagnosis, refusal, xids, xid_unavailable = None, None, None, None
    if request.GET.get("diagnose"):
        try:
            diagnosis = node_diagnosis(found)
        except ServiceError as error:
            refusal = error.detail
        try:  # the XID layer, from DCGM: for every driver
            xids = [e.as_dict() for e in gpu_errors(now=timezone.now(), nodes=[found])]
        except PrometheusUnavailable as error:
            xid_unavailable = str(error)
    allocations = allocations_on(found, HOLDS_DEVICES).select_related("tenant").order_by("pk")
    context = {
        "node": found,
        "versions": [(f.label, getattr(found, f.attr)) for f in VERSION_FIELDS],
        "allocations": allocations,
        "diagnosis": diagnosis,
        "refusal": refusal,
        "xids": xids,
        "xid_unavailable": xid_unavailable,
        "actions": NODE_ACTIONS,
        "may_change": staff_may(request.user, CHANGE_NODE),
    }
    return render(request, "consoles/operators/node.html", context)


@staff_page(CONSOLE, CHANGE_NODE)
def node_action(request: HttpRequest, node_id: int, action: str) -> HttpResponse:
    """Drain, undrain or quarantine a node: a confirmation with the reason (kept in the audit log), then the
    service; a refusal (a transition the node's state does not allow) is shown on the form."""
    if action not in NODE_ACTIONS:
        raise Http404("No such action.")
    found = _node(node_id)
    title, service = NODE_ACTIONS[action]
    if request.method == "POST":
        done = already_done(request)
        if done:
            return redirect(done)
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            changed = service(node=found, actor=actor(request), reason=form.cleaned_data["reason"])
        except ServiceError as error:
            error_onto(form, error)
        else:
            where = reverse("portal:console_node", kwargs={"node_id": found.pk})
            mark_done(request, where)
            messages.success(request, f"{changed.hostname} is {changed.state}.")
            return redirect(where)
    context = {"node": found, "action": action, "title": title, "form": form}
    return render(request, "consoles/operators/node_action.html", context, status=422 if form.errors else 200)


@staff_page(CONSOLE, StaffPermission.NODE_VIEW, acting=CHANGE_NODE)
def defragment(request: HttpRequest) -> HttpResponse:
    """Fragmentation per GPU model and hall now, the plan a defragmentation would carry out (a dry run: nothing
    moves) with the figures after it, the runs so far, and (with ``provisioning.change_node``) starting a run."""
    form = DefragmentStartForm(request.POST or None)
    if request.method == "POST":
        done = already_done(request)
        if done:
            return redirect(done)
        if form.is_valid():
            try:
                run = defragment_start(actor=actor(request))
            except ServiceError as error:
                error_onto(form, error)
            else:
                where = reverse("portal:console_defragment") + f"#run-{run.pk}"
                mark_done(request, where)
                messages.success(request, f"Defragmentation run {run.pk} started: {len(run.steps)} moves.")
                return redirect(where)
    with fleet_read() as fleet_now:
        now = fragmentation_figures(fleet_now.state)
    plan, tenants = defragment_plan()
    moves = plan_moves(plan, tenants)
    context = {
        "now": now,
        "after": fragmentation_figures(plan.after),
        "moves": moves,
        "runs": DefragmentRun.objects.order_by("-pk")[:10],
        "form": form if request.method == "POST" else DefragmentStartForm(),
        "may_start": staff_may(request.user, CHANGE_NODE),
    }
    return render(request, "consoles/operators/defragment.html", context, status=422 if form.errors else 200)


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def skew(request: HttpRequest) -> HttpResponse:
    domains = version_skew()
    skewed = sum(1 for d in domains if d.fields)
    return render(request, "consoles/operators/skew.html", {"domains": domains, "skewed": skewed})


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def storage(request: HttpRequest) -> HttpResponse:
    """Each region's storage per class: the volumes the backend holds (filesystem, block) and the ready snapshots,
    their count, the GB provisioned (what is billed) and the GB in use as last reported; with the totals per class."""
    figures = storage_figures()
    regions: dict[str, list[Any]] = {}
    for row in figures:
        regions.setdefault(row.region, []).append(row)
    totals = {}
    for kind in STORAGE_CLASSES:
        rows = [r for r in figures if r.storage_class == kind]
        reported = [r.used_gb for r in rows if r.used_gb is not None]
        totals[kind] = {
            "count": sum(r.count for r in rows),
            "provisioned_gb": sum(r.provisioned_gb for r in rows),
            "used_gb": sum(reported) if reported else None,  # none reported: unknown, not zero
        }
    return render(request, "consoles/operators/storage.html", {"regions": regions, "totals": totals})


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def cold_starts(request: HttpRequest) -> HttpResponse:
    """Every serverless endpoint's cold starts of the last days: how many wakes and their P50/P90/P99, the slowest
    P90 first (the figures ``GET /api/v1/allocations/{id}/cold-starts`` gives its tenant)."""
    context = {"rows": console_cold_starts(), "days": CONSOLE_DAYS}
    return render(request, "consoles/operators/cold_starts.html", context)


IDLE_WINDOW_DAYS = (1, 7, 30)


def _window_days(request: HttpRequest) -> int:
    """The days a GPU page looks back (``?days=``): one of ``IDLE_WINDOW_DAYS``, else 1."""
    asked = request.GET.get("days", "1")
    return int(asked) if asked in {str(d) for d in IDLE_WINDOW_DAYS} else 1


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def idle_gpus(request: HttpRequest) -> HttpResponse:
    """Billed but idle: each tenant's GPU-hours per rung over the last day (``?days=7`` or 30), and how many of them
    its GPUs averaged under 5% SM active, from DCGM through Prometheus (``provisioning.telemetry.held_gpu_hours``)."""
    days, now = _window_days(request), timezone.now()
    rows, unavailable = [], None
    try:
        rows = held_gpu_hours(start=now - timedelta(days=days), end=now)
    except PrometheusUnavailable as error:
        unavailable = str(error)
    context = {"rows": rows, "days": days, "choices": IDLE_WINDOW_DAYS, "unavailable": unavailable}
    return render(request, "consoles/operators/idle_gpus.html", context)


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def metering_check(request: HttpRequest) -> HttpResponse:
    """The metering cross-check: allocations billed in the last days (``?days=7`` or 30; default 1) for devices that
    reported nothing to DCGM in those hours (``lifecycle.metering_check``): look at them before invoices close."""
    days, now = _window_days(request), timezone.now()
    rows, unavailable = [], None
    try:
        rows = unreported_usage(start=now - timedelta(days=days), end=now, now=now)
    except PrometheusUnavailable as error:
        unavailable = str(error)
    context = {"rows": rows, "days": days, "choices": IDLE_WINDOW_DAYS, "unavailable": unavailable}
    return render(request, "consoles/operators/metering_check.html", context)


def _quota_rows(form_for: dict[int, QuotaForm]) -> list[dict[str, Any]]:
    held = dict(
        Allocation.objects.filter(state__in=HOLDS_DEVICES)
        .values("tenant_id")
        .annotate(milli=Sum("quota_milli"))
        .values_list("tenant_id", "milli")
    )
    stored = volumes_counted_gb()
    rows = []
    for tenant in Tenant.objects.order_by("slug"):
        quota = tenant.gpu_quota_milli
        initial = {
            "gpus": None if quota is None else Decimal(quota) / 1000,
            "endpoint_calls": tenant.endpoint_calls_per_minute,
            "volume_gb": tenant.volume_quota_gb,
        }
        rows.append(
            {
                "tenant": tenant,
                "quota": None if quota is None else Decimal(quota) / 1000,
                "held": Decimal(held.get(tenant.pk) or 0) / 1000,
                "endpoint_calls": endpoint_calls_per_minute(tenant),
                "endpoint_calls_own": tenant.endpoint_calls_per_minute is not None,
                "volume_quota_gb": tenant.volume_quota_gb,
                "volume_held_gb": stored.get(tenant.pk) or 0,
                "form": form_for.get(tenant.pk) or QuotaForm(initial=initial, prefix=f"t{tenant.pk}"),
            }
        )
    return rows


@staff_page(CONSOLE, StaffPermission.TENANT_QUOTA_SET)
def quotas(request: HttpRequest) -> HttpResponse:
    """Each tenant's GPU quota and what it holds now, the calls a minute each of its endpoints takes, and its
    storage quota and the GB its volumes hold; set them (the service the API's quota PUT calls)."""
    forms: dict[int, QuotaForm] = {}
    if request.method == "POST":
        done = already_done_prefixed(request)
        if done:
            return redirect(done)
        tenant = get_object_or_404(Tenant, slug=request.POST.get("tenant", ""))
        form = QuotaForm(request.POST, prefix=f"t{tenant.pk}")
        if form.is_valid():
            gpus = form.cleaned_data["gpus"]
            try:
                tenant = tenant_set_quota(
                    tenant=tenant,
                    gpu_quota_milli=None if gpus is None else int(gpus * 1000),
                    endpoint_calls_per_minute=form.cleaned_data["endpoint_calls"],
                    volume_quota_gb=form.cleaned_data["volume_gb"],
                    actor=actor(request),
                )
            except ServiceError as error:
                fields = {
                    "gpu_quota_milli": "gpus",
                    "endpoint_calls_per_minute": "endpoint_calls",
                    "volume_quota_gb": "volume_gb",
                }
                error_onto(form, error, fields)
            else:
                where = reverse("portal:console_quotas") + f"#tenant-{tenant.slug}"
                mark_done(request, where, prefix=f"t{tenant.pk}")
                quota = "no quota" if gpus is None else f"a quota of {gpus:g} GPUs"
                calls = endpoint_calls_per_minute(tenant)
                gb = tenant.volume_quota_gb
                storage = "have no storage quota" if gb is None else f"may hold {gb} GB"
                said = f"{tenant.slug} now has {quota}; each endpoint takes {calls} calls a minute."
                messages.success(request, f"{said} Its volumes {storage}.")
                return redirect(where)
        forms[tenant.pk] = form
    status = 422 if any(f.errors for f in forms.values()) else 200
    context = {"rows": _quota_rows(forms), "default_endpoint_calls": settings.LADDER_ENDPOINT_CALLS_PER_MINUTE}
    return render(request, "consoles/operators/quotas.html", context, status=status)


def already_done_prefixed(request: HttpRequest) -> str | None:
    """``frame.already_done`` for a form drawn with a prefix (one quota form per tenant)."""
    tenant = Tenant.objects.filter(slug=request.POST.get("tenant", "")).values_list("pk", flat=True).first()
    return already_done(request, prefix=f"t{tenant}") if tenant else None


urlpatterns = [
    path("console/operators/", fleet, name="console_fleet"),
    path("console/operators/nodes/<int:node_id>", node, name="console_node"),
    path("console/operators/nodes/<int:node_id>/<str:action>", node_action, name="console_node_action"),
    path("console/operators/defragment", defragment, name="console_defragment"),
    path("console/operators/skew", skew, name="console_skew"),
    path("console/operators/storage", storage, name="console_storage"),
    path("console/operators/cold-starts", cold_starts, name="console_cold_starts"),
    path("console/operators/idle-gpus", idle_gpus, name="console_idle_gpus"),
    path("console/operators/metering-check", metering_check, name="console_metering_check"),
    path("console/operators/quotas", quotas, name="console_quotas"),
]
