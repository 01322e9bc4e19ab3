"""The portal's pages for a tenant's members: what runs and what it costs, launching and stopping, the team and its
keys, the tenant's data, and leaving.

Every view is thin: it finds the caller's membership (``member``: 404 for another tenant's objects, 403 when the
role does not allow the action), calls the same services and selectors as the API, and renders. Parts that change
while a page is open (states, logs, cost) are fragments the page polls with htmx.
"""

from __future__ import annotations

import csv
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from billing.domain.pricing import price_shown, round_money
from billing.selectors import invoice_upcoming, month_of, offerings_priced, usage_rows
from billing.services.accounts import billing_account
from compliance.domain import retention
from compliance.models import DataAsset, ErasureItem, ErasureOutcome, ErasureRequest, TenantSecret
from compliance.reports import residency_report
from compliance.services.assets import retention_keep_days
from compliance.services.erasure import erasure_request_create
from compliance.services.sweep import retention_policy_set
from core.actor import Actor
from core.errors import ServiceError
from core.logs import context_bind
from core.models import AuditEvent
from lifecycle.services.closure import tenant_close
from lifecycle.services.customers import allocation_request
from lifecycle.services.volumes import volumes_described
from portal import words
from portal.capacity import capacity_choices, class_promises, reservation_rows, spot_words
from portal.cold_starts import endpoint_cold_starts
from portal.forms import (
    ApiKeyForm,
    ErasureForm,
    InviteForm,
    LaunchForm,
    LeaveForm,
    RetentionForm,
    RoleForm,
    error_onto,
)
from portal.gpu_metrics import allocation_gpu_metrics, idle_stop_words
from portal.mounts import launch_volumes
from portal.signup import invitation_send
from provisioning.domain.placement.catalog import CATALOG
from provisioning.domain.placement.isolation import region_allowed
from provisioning.domain.placement.offerings import offerings
from provisioning.domain.rungs import Rung, rung_facts
from provisioning.domain.states import WORKING
from provisioning.drivers.base import provisioner
from provisioning.fleet_cache import fleet_read
from provisioning.models import Allocation, Region
from provisioning.selectors import region_info, tenant_policy
from provisioning.services.stopping import allocation_stop
from provisioning.services.workloads import endpoint_autoscaling, os_images
from tenancy.domain.roles import Action, TenantRole, role_allows
from tenancy.models import ApiKey, ApiKeyScope, Membership, SshKey, Tenant
from tenancy.services import api_key_create, api_key_revoke, member_change_role, member_invite, member_remove
from tenancy.totp import second_factor_passed

View = Callable[..., HttpResponse]
ROLES = [r.value for r in TenantRole]


def member(action: Action | None = None) -> Callable[[View], View]:
    """Signed-in members of a tenant only (staff have the admin); with ``action``, only roles that allow it. A member
    with a second factor who has not given the code yet is sent to the code step."""

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not second_factor_passed(request.user):
                return redirect_to_login(request.get_full_path(), reverse("portal:login_code"))
            membership = Membership.objects.filter(user=_me(request)).select_related("tenant").first()
            if membership is None:
                raise PermissionDenied("The portal is for a tenant's members.")
            if action is not None and not role_allows(membership.role, action):
                raise PermissionDenied(f"A {membership.role} may not do this.")
            request.membership = membership  # type: ignore[attr-defined]
            context_bind(tenant_id=membership.tenant_id, actor=f"user:{membership.user_id}")
            return view(request, membership, *args, **kwargs)

        return wrapped

    return decorate


def _me(request: HttpRequest) -> Any:
    """The signed-in user (every view here is behind ``member``, which requires one)."""
    return request.user


def _actor(request: HttpRequest, membership: Membership) -> Actor:
    return Actor.for_user(request.user)


def _allocations(membership: Membership) -> Any:
    return (
        Allocation.objects.filter(tenant=membership.tenant)
        .select_related("tenant", "gpu_model", "hall__region")
        .prefetch_related("devices")
        .order_by("-pk")
    )


def cost_figures(membership: Membership) -> dict[str, Any]:
    """Month to date, a straight-line forecast to month end, and the budget."""
    now = timezone.now()
    start, end = month_of(now)
    upcoming = invoice_upcoming(tenant=membership.tenant, now=now)  # one read of the ledger: the month so far
    spent = upcoming.total
    elapsed = Decimal((now - start) // timedelta(microseconds=1))
    forecast = spent * Decimal((end - start) // timedelta(microseconds=1)) / elapsed if elapsed > 0 else spent
    account = billing_account(membership.tenant)
    budget = account.budget_monthly
    return {
        "spent": spent,
        "forecast": round_money(forecast, upcoming.currency),
        "currency": upcoming.currency.upper(),
        "budget": budget,
        "budget_left": (budget - spent) if budget is not None else None,
        "hard_stop": account.budget_hard_stop,
    }


# --- running ---------------------------------------------------------------------------------------------------


@member()
def home(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(
        request,
        "portal/home.html",
        {
            "allocations": _allocations(membership)[:50],
            "cost": cost_figures(membership),
            "may_launch": role_allows(membership.role, Action.ALLOCATION_MANAGE),
            "may_reserve": role_allows(membership.role, Action.RESERVATION_ORDER),
            "rungs": words.RUNGS,
            "reservations": reservation_rows(membership.tenant, timezone.now()),
        },
    )


@member()
def allocations_fragment(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(
        request,
        "portal/_allocations.html",
        {"allocations": _allocations(membership)[:50], "cost": cost_figures(membership)},
    )


def _allocation(membership: Membership, allocation_id: int) -> Allocation:
    return get_object_or_404(_allocations(membership), pk=allocation_id)


def _live(allocation: Allocation) -> dict[str, Any]:
    driver = provisioner()
    return {
        "allocation": allocation,
        "access": driver.access(allocation).as_dict(),
        "logs": driver.logs(allocation, tail=40),
        "events": driver.events(allocation)[-20:],
        "ended": allocation.state in ("stopped", "failed"),
        "state_words": words.STATES.get(allocation.state, ""),
        "goodput_lost": words.duration(allocation.goodput_lost_ms / 1000),
        "cold_starts": endpoint_cold_starts(allocation),
        "spot": spot_words(allocation),
    }


@member()
def allocation(request: HttpRequest, membership: Membership, allocation_id: int) -> HttpResponse:
    found = _allocation(membership, allocation_id)
    context = {
        **_live(found),
        "performance": words.PERFORMANCE.get(found.performance, found.performance),
        "security": words.SECURITY.get(found.security, found.security),
        "may_stop": role_allows(membership.role, Action.ALLOCATION_MANAGE),
        "gpu": allocation_gpu_metrics(found, request.GET.get("gpu_window", "")),
        "idle_stop": idle_stop_words(found),
        "host": words.host(found.host, found.host_beyond),
    }
    scaling = endpoint_autoscaling(found)
    if scaling is not None:
        context["autoscaling"] = words.autoscaling(scaling)
    return render(request, "portal/allocation.html", context)


@member()
def allocation_fragment(request: HttpRequest, membership: Membership, allocation_id: int) -> HttpResponse:
    return render(request, "portal/_allocation_live.html", _live(_allocation(membership, allocation_id)))


@member(Action.ALLOCATION_MANAGE)
def allocation_stop_view(request: HttpRequest, membership: Membership, allocation_id: int) -> HttpResponse:
    found = _allocation(membership, allocation_id)
    if request.method == "POST":
        try:
            allocation_stop(allocation=found, actor=_actor(request, membership))
        except ServiceError as error:
            messages.error(request, f"{found.name} was not stopped: {error.detail}")
        else:
            messages.success(request, f"{found.name} is stopping; billing stops with it.")
        return redirect("portal:allocation", allocation_id=found.pk)
    return render(request, "portal/stop.html", {"allocation": found})


# --- launching -------------------------------------------------------------------------------------------------


def regions_allowed(tenant: Tenant) -> list[str]:
    """The codes of the regions the tenant's residency allows, in order (where it may run work and keep data)."""
    policy = tenant_policy(tenant)
    return [r.code for r in Region.objects.order_by("code") if region_allowed(policy, region_info(r)) is None]


def _offer(membership: Membership, rung: str) -> dict[str, Any]:
    """What the launch page shows before anything is bought: both isolation promises, where it is available
    within the tenant's residency, and the price per hour there."""
    tenant = membership.tenant
    regions = set(Region.objects.values_list("code", flat=True))
    allowed = set(regions_allowed(tenant))
    with fleet_read() as fleet:
        offered = [o for o in offerings(fleet.state) if o.rung == rung and o.region in allowed]
    table = []
    for priced in offerings_priced(offered, now=timezone.now()):
        row = priced.offering
        available = row.sovereign_available if tenant.sovereign else row.available
        table.append(
            {
                "gpu_model": row.gpu_model,
                "region": row.region,
                "available": available,
                "what": words.RUNGS[rung]["item"] + ("" if available == 1 else "s"),
                "prices": priced.per_hour,
                "classes": priced.classes(),
                "mig_profiles": row.mig_profiles,
                "host": priced.host(),
            }
        )
    refused = sorted(set(regions) - allowed)
    return {"rows": table, "regions": sorted(allowed), "refused_regions": refused}


@member(Action.ALLOCATION_MANAGE)
def launch(request: HttpRequest, membership: Membership) -> HttpResponse:
    rung = request.POST.get("rung") or request.GET.get("rung") or Rung.CONTAINER.value
    if rung not in words.RUNGS:
        raise Http404("No such rung.")
    tenant = membership.tenant
    offer = _offer(membership, rung)
    models = sorted({row["gpu_model"] for row in offer["rows"]}) or sorted(CATALOG)
    profiles = sorted({p for row in offer["rows"] for p in row["mig_profiles"]})
    secret_names = [(s, s) for s in TenantSecret.objects.filter(tenant=tenant).values_list("name", flat=True)]
    choices = {
        "gpu_model": [(m, m) for m in models],
        "region": [("", "any region I may use"), *((r, r) for r in offer["regions"])],
        "mig_profile": [("", "—"), *((p, p) for p in profiles)],
        "secrets": secret_names,
        "secret_files": secret_names,
        "pull_secret": [("", "—"), *secret_names],
        "dataset": [
            ("", "—"),
            *(
                (str(a.pk), f"{a.name} ({a.region.code}, {a.size_bytes} bytes)")
                for a in DataAsset.objects.filter(tenant=tenant, category="dataset", state="live").select_related(
                    "region"
                )
            ),
        ],
        "ssh_keys": [(str(k.pk), f"{k.name} ({k.fingerprint})") for k in SshKey.objects.filter(tenant=tenant)],
        "os_image": [("", "—"), *((name, image.title) for name, image in os_images().items())],
        **capacity_choices(tenant, timezone.now()),
    }
    initial = {"rung": rung, "idempotency": uuid.uuid4().hex, "name": f"my-{rung.replace('_', '-')}"}
    form = LaunchForm(request.POST or None, initial=initial, choices=choices, **launch_volumes(tenant, rung))
    if request.method == "POST" and form.is_valid():
        done = request.session.setdefault("launched", {})
        token = form.cleaned_data["idempotency"]
        if token in done:  # the same form sent twice (a double click, a reload): one allocation
            return redirect("portal:allocation", allocation_id=done[token])
        try:
            made = allocation_request(
                tenant=tenant,
                name=form.cleaned_data["name"],
                spec=form.spec(),
                actor=_actor(request, membership),
                workload=form.workload(),
            )
        except ServiceError as error:
            error_onto(form, error, {"gpus": "gpus", "regions": "region", **form.error_fields()})
        else:
            done[token] = made.pk
            request.session.modified = True
            messages.success(request, f"{made.name} is placed on {made.hall.code}; it runs in a moment.")
            return redirect("portal:allocation", allocation_id=made.pk)
    context = {
        "form": form,
        "rung": rung,
        "rung_words": words.RUNGS[rung],
        "rungs": words.RUNGS,
        "offer": offer,
        "cost": cost_figures(membership),
        "performance": [words.PERFORMANCE[p] for p in words.RUNGS[rung]["performance"]],
        "security": words.SECURITY[words.RUNGS[rung]["security"]],
        "share_modes": rung_facts(rung).soft_sharing,
        "volume_words": {"read_only": words.READ_ONLY, "placement": words.PLACEMENT_FOLLOWS},
        "class_promises": class_promises(rung),
    }
    return render(request, "portal/launch.html", context, status=422 if form.errors else 200)


# --- usage and cost --------------------------------------------------------------------------------------------


@member(Action.BILLING_VIEW)
def usage(request: HttpRequest, membership: Membership) -> HttpResponse:
    now = timezone.now()
    start, _ = month_of(now)
    rows = usage_rows(tenant=membership.tenant, start=start, end=now, granularity="day", now=now)
    if request.GET.get("format") == "csv":
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="ladder-usage-{start:%Y-%m}.csv"'
        writer = csv.writer(response)
        # unit and quantity come last: the first five columns keep their places for readers of the older file.
        writer.writerow(["day", "sku", "gpu_seconds", "amount", "currency", "unit", "quantity"])
        for row in rows:
            day = f"{row.window_start:%Y-%m-%d}"
            writer.writerow([day, row.sku, row.gpu_seconds, row.amount, row.currency, row.unit, row.quantity])
        return response
    days = sorted({f"{r.window_start:%Y-%m-%d}" for r in rows})
    per_sku: dict[str, dict[str, str]] = defaultdict(dict)
    for row in rows:
        per_sku[row.sku][f"{row.window_start:%Y-%m-%d}"] = str(row.amount)
    chart = {"days": days, "series": [{"sku": s, "amounts": [v.get(d, "0") for d in days]} for s, v in per_sku.items()]}
    invoice = invoice_upcoming(tenant=membership.tenant, now=now)
    # Prices as the API shows them: six places, ten where a price needs them (storage per GB-hour).
    lines = [{**line, "unit_price": price_shown(line["unit_price"])} for line in invoice.lines]
    context = {"rows": rows, "chart": chart, "cost": cost_figures(membership), "invoice": invoice, "lines": lines}
    return render(request, "portal/usage.html", context)


# --- team and keys ---------------------------------------------------------------------------------------------


@member()
def team(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant = membership.tenant
    manage = role_allows(membership.role, Action.MEMBER_MANAGE)
    invite = InviteForm(request.POST if request.POST.get("form") == "invite" else None)
    key_form = ApiKeyForm(request.POST if request.POST.get("form") == "key" else None)
    issued = None
    if request.method == "POST" and request.POST.get("form") == "invite" and invite.is_valid():
        if not manage:
            raise PermissionDenied("Only owners and admins invite.")
        try:
            added = member_invite(
                tenant=tenant,
                actor_role=membership.role,
                username=invite.cleaned_data["email"].lower(),
                email=invite.cleaned_data["email"].lower(),
                role=invite.cleaned_data["role"],
                actor=_actor(request, membership),
            )
        except ServiceError as error:
            error_onto(invite, error, {"username": "email"})
        else:
            invitation_send(request, added.user, tenant.name, request.user.get_username())
            messages.success(request, f"{added.user.email} is invited as {added.role}.")
            return redirect("portal:team")
    if request.method == "POST" and request.POST.get("form") == "key" and key_form.is_valid():
        scopes: list[str] = [ApiKeyScope.READ, *([ApiKeyScope.WRITE] if key_form.cleaned_data["write"] else [])]
        try:
            issued = api_key_create(
                user=request.user,
                name=key_form.cleaned_data["name"],
                scopes=scopes,
                expires_at=None,
                actor=_actor(request, membership),
            )
        except ServiceError as error:
            error_onto(key_form, error)
    see_all = role_allows(membership.role, Action.API_KEY_MANAGE_ANY)
    keys = ApiKey.objects.filter(tenant=tenant, revoked_at=None).select_related("user").order_by("-pk")
    if not see_all:
        keys = keys.filter(user=_me(request))
    context = {
        "members": Membership.objects.filter(tenant=tenant).select_related("user").order_by("pk"),
        "keys": keys,
        "issued": issued,
        "invite": invite,
        "key_form": key_form,
        "manage": manage,
        "roles": ROLES,
        "audit": AuditEvent.objects.filter(tenant=tenant).order_by("-seq")[:30],
    }
    return render(request, "portal/team.html", context)


@require_POST
@member()
def api_key_revoke_view(request: HttpRequest, membership: Membership, key_id: int) -> HttpResponse:
    keys = ApiKey.objects.filter(tenant=membership.tenant)
    if not role_allows(membership.role, Action.API_KEY_MANAGE_ANY):
        keys = keys.filter(user=_me(request))
    key = get_object_or_404(keys, pk=key_id)
    try:
        api_key_revoke(key=key, actor=_actor(request, membership))
    except ServiceError as error:
        messages.error(request, f"The key {key.name} was not revoked: {error.detail}")
    else:
        messages.success(request, f"The key {key.name} is revoked.")
    return redirect("portal:team")


def _membership(membership: Membership, membership_id: int) -> Membership:
    return get_object_or_404(
        Membership.objects.filter(tenant=membership.tenant).select_related("user"), pk=membership_id
    )


@require_POST
@member(Action.MEMBER_MANAGE)
def member_role_view(request: HttpRequest, membership: Membership, membership_id: int) -> HttpResponse:
    """Change a member's role (only an owner makes or unmakes an owner; the last owner stays)."""
    found = _membership(membership, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
        return redirect("portal:team")
    try:
        changed = member_change_role(
            membership=found,
            actor_role=membership.role,
            role=form.cleaned_data["role"],
            actor=_actor(request, membership),
        )
    except ServiceError as error:
        messages.error(request, f"{found.user.username}: {error.detail}")
    else:
        messages.success(request, f"{changed.user.username} is now {changed.role}.")
    return redirect("portal:team")


@member(Action.MEMBER_MANAGE)
def member_remove_view(request: HttpRequest, membership: Membership, membership_id: int) -> HttpResponse:
    """Remove a member after a confirmation: the membership goes, their keys are revoked, the account is off."""
    found = _membership(membership, membership_id)
    refusal, status = None, 200
    if request.method == "POST":
        try:
            member_remove(membership=found, actor_role=membership.role, actor=_actor(request, membership))
        except ServiceError as error:
            refusal, status = error.detail, error.status
        else:
            messages.success(request, f"{found.user.username} is removed; their API keys are revoked.")
            return redirect("portal:team")
    context = {"member": found, "refusal": refusal, "me": found.user_id == request.user.pk}
    return render(request, "portal/member_remove.html", context, status=status)


# --- data and leaving ------------------------------------------------------------------------------------------


@member(Action.DATA_VIEW)
def data(request: HttpRequest, membership: Membership, erasure_form: ErasureForm | None = None) -> HttpResponse:
    tenant = membership.tenant
    form = RetentionForm(request.POST if erasure_form is None else None)
    if request.method == "POST" and erasure_form is None and form.is_valid():
        if not role_allows(membership.role, Action.RETENTION_MANAGE):
            raise PermissionDenied("Only owners set retention.")
        zero = form.cleaned_data["zero_retention"]
        try:
            retention_policy_set(
                tenant=tenant,
                category=form.cleaned_data["category"],
                days=None if zero else form.cleaned_data["days"],
                zero_retention=zero,
                actor=_actor(request, membership),
            )
        except ServiceError as error:
            messages.error(request, error.detail)
        else:
            messages.success(request, f"Retention for {form.cleaned_data['category']} is set.")
        return redirect("portal:data")
    keep = retention_keep_days([tenant.pk])[tenant.pk]
    policies = [{"category": c.value, "days": keep[c.value]} for c in retention.Category]
    may_erase = role_allows(membership.role, Action.ERASURE_REQUEST)
    context = {
        "assets": DataAsset.objects.filter(tenant=tenant).select_related("region").order_by("-pk")[:100],
        "policies": policies,
        "may_set": role_allows(membership.role, Action.RETENTION_MANAGE),
        "residency": residency_report(tenant=tenant),
        "may_erase": may_erase,
        "erasures": _erasures(membership)[:20] if may_erase else [],
        "erasure_form": erasure_form or _erasure_form(None),
    }
    return render(request, "portal/data.html", context, status=422 if erasure_form else 200)


def _erasure_form(data: Any) -> ErasureForm:
    return ErasureForm(data, categories=[c.value for c in retention.Category])


def _erasures(membership: Membership) -> list[dict[str, Any]]:
    """The tenant's erasure requests, newest first, with what each erased and what a legal hold withheld: the
    hold's id only (its matter is the compliance team's, not the tenant's to read)."""
    requests = (
        ErasureRequest.objects.filter(tenant=membership.tenant)
        .prefetch_related(Prefetch("items", queryset=ErasureItem.objects.select_related("asset").order_by("pk")))
        .order_by("-pk")
    )
    return [
        {
            "request": r,
            "categories": r.scope.get("categories") or [],
            "deleted": [i.asset for i in r.items.all() if i.outcome == ErasureOutcome.DELETED],
            "withheld": [(i.asset, i.hold_id) for i in r.items.all() if i.outcome == ErasureOutcome.WITHHELD],
            "affected": [i.asset for i in r.items.all() if i.outcome == ErasureOutcome.AFFECTED],
        }
        for r in requests
    ]


@require_POST
@member(Action.ERASURE_REQUEST)
def erasure_request_view(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Ask to erase the tenant's data of one category: what no legal hold preserves is shredded after the waiting
    period; what a hold preserves is withheld, and the page says which hold."""
    form = _erasure_form(request.POST)
    if form.is_valid():
        try:
            made = erasure_request_create(
                tenant=membership.tenant, actor=_actor(request, membership), categories=[form.cleaned_data["category"]]
            )
        except ServiceError as error:
            error_onto(form, error, {"categories": "category"})
        else:
            messages.success(request, f"Erasure request {made.pk} is recorded.")
            return redirect("portal:data")
    return data(request, erasure_form=form)


@member(Action.TENANT_CLOSE)
def leave(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant = membership.tenant
    form = LeaveForm(request.POST or None, slug=tenant.slug)
    if request.method == "POST" and form.is_valid():
        try:
            closure = tenant_close(tenant=tenant, actor=_actor(request, membership))
        except ServiceError as error:
            form.add_error(None, error.detail)
        else:
            context = {"closure": closure, "tenant": tenant, "volumes": volumes_described(tenant)}
            return render(request, "portal/left.html", context)
    running = Allocation.objects.filter(tenant=tenant, state__in=WORKING)
    context = {
        "form": form,
        "tenant": tenant,
        "running": running.count(),
        "cost": cost_figures(membership),
        "volumes": volumes_described(tenant),  # their data is not exported: copied out before closing, or lost
    }
    return render(request, "portal/leave.html", context, status=422 if form.errors else 200)
