"""The operator console: the fleet as a heatmap, a node's page (its GPUs, versions, diagnosis by layer, and drain,
undrain, quarantine with a reason after a confirmation), fragmentation and the defragmentation plan (a dry run, and
starting a run), version skew within each NVLink domain, and tenants' GPU quotas. Every action calls the service
the API calls."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse

from core.errors import ServiceError
from portal.consoles.fleet_map import PALETTE, STATES, fleet_map
from portal.consoles.forms import DefragmentStartForm, QuotaForm, ReasonForm
from portal.consoles.frame import Console, Page, actor, already_done, mark_done, register, staff_page
from portal.forms import error_onto
from provisioning.fleet_cache import fleet_read
from provisioning.kubernetes.clusters import node_diagnosis
from provisioning.models import Allocation, DefragmentRun, Node
from provisioning.placement.fragmentation import fragmentation
from provisioning.services import fleet as fleet_services
from provisioning.services.defragment import defragment_plan, defragment_start, plan_moves
from provisioning.states import HOLDS_DEVICES
from tenancy.models import Tenant
from tenancy.roles import StaffPermission
from tenancy.selectors import staff_may
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
VERSION_FIELDS = [
    ("driver", "driver_version"),
    ("firmware", "firmware_version"),
    ("CUDA", "cuda_version"),
    ("NCCL", "nccl_version"),
]


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def fleet(request: HttpRequest) -> HttpResponse:
    """The heatmap, coloured by tenant (default) or by node state (``?colour=state``)."""
    colour = "state" if request.GET.get("colour") == "state" else "tenant"
    drawn = fleet_map()
    context = {
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
    not offer its GPUs, layer by layer, read from its hall's cluster."""
    found = _node(node_id)
    diagnosis, refusal = None, None
    if request.GET.get("diagnose"):
        try:
            diagnosis = node_diagnosis(found)
        except ServiceError as error:
            refusal = error.detail
    allocations = (
        Allocation.objects.filter(devices__gpu__node=found, devices__active=True)
        .select_related("tenant")
        .distinct()
        .order_by("pk")
    )
    context = {
        "node": found,
        "versions": [(label, getattr(found, attr)) for label, attr in VERSION_FIELDS],
        "allocations": allocations,
        "diagnosis": diagnosis,
        "refusal": refusal,
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


def _figures(state: Any) -> list[dict[str, Any]]:
    return [
        {
            "gpu_model": p.model,
            "hall": p.hall,
            "gpus": p.gpus,
            "free_gpus": p.free_gpus,
            "unallocated_gpus": p.unallocated_gpus,
            "stranded_mig_slices": p.stranded_mig_slices,
            "largest_gang_gpus": sorted(p.largest_gang_gpus.items()),
        }
        for p in fragmentation(state)
    ]


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
        now = _figures(fleet_now.state)
    plan, tenants = defragment_plan()
    moves = plan_moves(plan, tenants)
    context = {
        "now": now,
        "after": _figures(plan.after),
        "moves": moves,
        "runs": DefragmentRun.objects.order_by("-pk")[:10],
        "form": form if request.method == "POST" else DefragmentStartForm(),
        "may_start": staff_may(request.user, CHANGE_NODE),
    }
    return render(request, "consoles/operators/defragment.html", context, status=422 if form.errors else 200)


def version_skew() -> list[dict[str, Any]]:
    """Per NVLink domain (within its hall), each version that differs between its nodes: the values, and which
    nodes run the ones fewer of them run (the majority is the domain's norm)."""
    domains: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for found in Node.objects.select_related("hall").order_by("hall__code", "nvlink_domain", "hostname"):
        domains[(found.hall.code, found.nvlink_domain)].append(found)
    out = []
    for (hall, domain), nodes in domains.items():
        fields = []
        for label, attr in VERSION_FIELDS:
            counted = Counter(getattr(n, attr) for n in nodes)
            if len(counted) > 1:
                norm = counted.most_common(1)[0][0]
                fields.append(
                    {
                        "label": label,
                        "values": sorted(counted.items()),
                        "norm": norm,
                        "outliers": [(n, getattr(n, attr)) for n in nodes if getattr(n, attr) != norm],
                    }
                )
        out.append({"hall": hall, "domain": domain, "nodes": len(nodes), "fields": fields})
    out.sort(key=lambda d: (not d["fields"], d["hall"], d["domain"]))
    return out


@staff_page(CONSOLE, StaffPermission.NODE_VIEW)
def skew(request: HttpRequest) -> HttpResponse:
    domains = version_skew()
    skewed = sum(1 for d in domains if d["fields"])
    return render(request, "consoles/operators/skew.html", {"domains": domains, "skewed": skewed})


def _quota_rows(form_for: dict[int, QuotaForm]) -> list[dict[str, Any]]:
    held = dict(
        Allocation.objects.filter(state__in=HOLDS_DEVICES)
        .values("tenant_id")
        .annotate(milli=Sum("quota_milli"))
        .values_list("tenant_id", "milli")
    )
    rows = []
    for tenant in Tenant.objects.order_by("slug"):
        quota = tenant.gpu_quota_milli
        rows.append(
            {
                "tenant": tenant,
                "quota": None if quota is None else Decimal(quota) / 1000,
                "held": Decimal(held.get(tenant.pk) or 0) / 1000,
                "form": form_for.get(tenant.pk)
                or QuotaForm(
                    initial={"gpus": None if quota is None else Decimal(quota) / 1000}, prefix=f"t{tenant.pk}"
                ),
            }
        )
    return rows


@staff_page(CONSOLE, StaffPermission.TENANT_QUOTA_SET)
def quotas(request: HttpRequest) -> HttpResponse:
    """Each tenant's GPU quota and what it holds now; set or lift one (the service the API's quota PUT calls)."""
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
                    tenant=tenant, gpu_quota_milli=None if gpus is None else int(gpus * 1000), actor=actor(request)
                )
            except ServiceError as error:
                error_onto(form, error, {"gpu_quota_milli": "gpus"})
            else:
                where = reverse("portal:console_quotas") + f"#tenant-{tenant.slug}"
                mark_done(request, where, prefix=f"t{tenant.pk}")
                quota = "no quota" if gpus is None else f"a quota of {gpus:g} GPUs"
                messages.success(request, f"{tenant.slug} now has {quota}.")
                return redirect(where)
        forms[tenant.pk] = form
    status = 422 if any(f.errors for f in forms.values()) else 200
    return render(request, "consoles/operators/quotas.html", {"rows": _quota_rows(forms)}, status=status)


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
    path("console/operators/quotas", quotas, name="console_quotas"),
]
