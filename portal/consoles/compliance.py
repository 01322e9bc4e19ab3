"""The compliance console: the audit log (search, chain verification against its signed checkpoint, signed bundles
streamed to the browser), the legal-hold register (preview, place, release; the volumes each hold preserves),
erasure requests with what holds withheld (volumes by name, region, size and state), and the residency report
across tenants (their volumes one by one). Every action calls the service the API calls."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import messages
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from compliance.domain.verify import checkpoint_payload, signature_valid
from compliance.models import ErasureItem, ErasureOutcome, ErasureRequest, HoldState, LegalHold
from compliance.reports import residency_report
from compliance.selectors import audit_chain_verify, audit_checkpoint_latest, changes_of
from compliance.services.assets import AssetScope
from compliance.services.audit import audit_checkpoint_take, audit_export_stream
from compliance.services.holds import (
    holds_of,
    legal_hold_create,
    legal_hold_preview,
    legal_hold_register,
    legal_hold_release,
)
from compliance.services.volumes import volumes_in_scope
from compliance.signing import audit_signer
from core.domain.chain import format_time
from core.errors import ServiceError
from core.models import AuditEvent
from portal.consoles.forms import AuditSearchForm, BundleForm, CheckpointForm, HoldPlaceForm, HoldScopeForm, ReasonForm
from portal.consoles.frame import Console, Page, actor, already_done, forbidden, mark_done, register, staff_page
from portal.forms import error_onto
from tenancy.domain.roles import StaffPermission
from tenancy.models import Tenant
from tenancy.selectors import staff_may

CONSOLE = register(
    Console(
        name="compliance",
        title="Compliance console",
        permission=StaffPermission.AUDIT_VIEW,
        pages=(
            Page("console_audit", "Audit log", StaffPermission.AUDIT_VIEW),
            Page("console_verify", "Chain verification", StaffPermission.AUDIT_VERIFY),
            Page("console_bundle", "Signed bundle", StaffPermission.AUDIT_VIEW),
            Page("console_holds", "Legal holds", StaffPermission.HOLD_VIEW),
            Page("console_erasures", "Erasure requests", StaffPermission.ERASURE_VIEW),
            Page("console_residency", "Residency", StaffPermission.DATA_ASSET_VIEW),
        ),
    )
)
PER_PAGE = 50


def _tenant_choices() -> list[tuple[str, str]]:
    return [(slug, f"{name} ({slug})") for slug, name in Tenant.objects.order_by("slug").values_list("slug", "name")]


def _tenant(slug: str) -> Tenant | None:
    return Tenant.objects.filter(slug=slug).first() if slug else None


# --- the audit log ----------------------------------------------------------------------------------------------


def _events(filters: dict[str, Any]) -> QuerySet[AuditEvent]:
    """The events the search names (as the API's filters: tenant slug, actor username, action prefix, target
    ``type`` or ``type:id``, ``from <= at < to``), newest first."""
    events = AuditEvent.objects.select_related("tenant").order_by("-seq")
    if filters.get("tenant"):
        events = events.filter(tenant__slug=filters["tenant"])
    if filters.get("actor"):
        events = events.filter(actor_label=filters["actor"])
    if filters.get("action"):
        events = events.filter(action__startswith=filters["action"])
    if filters.get("target"):
        target_type, _, target_id = filters["target"].partition(":")
        events = events.filter(target_type=target_type)
        if target_id:
            events = events.filter(target_id=target_id)
    if filters.get("since"):
        events = events.filter(at__gte=filters["since"])
    if filters.get("until"):
        events = events.filter(at__lt=filters["until"])
    return events


@staff_page(CONSOLE, StaffPermission.AUDIT_VIEW)
def audit(request: HttpRequest) -> HttpResponse:
    """Search the audit log; pages go back by sequence number (``before``), so a page costs the same however long
    the log is."""
    form = AuditSearchForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    events = _events(filters)
    before = request.GET.get("before", "")
    if before.isdigit():
        events = events.filter(seq__lt=int(before))
    page = list(events[: PER_PAGE + 1]) if not form.errors else []
    more = len(page) > PER_PAGE
    page = page[:PER_PAGE]
    query = request.GET.copy()
    query.pop("before", None)
    older = None
    if more:
        query["before"] = str(page[-1].seq)
        older = f"?{query.urlencode()}"
    rows = [{"event": e, "changes": changes_of(e.data)} for e in page]
    context = {"form": form, "rows": rows, "older": older, "newest": bool(before)}
    return render(request, "consoles/compliance/audit.html", context, status=422 if form.errors else 200)


def _checkpoint_facts() -> dict[str, Any] | None:
    """The latest signed checkpoint and whether its signature holds under the current key."""
    checkpoint = audit_checkpoint_latest()
    if checkpoint is None:
        return None
    signer = audit_signer()
    payload = checkpoint_payload(
        seq=checkpoint.seq, hash_=checkpoint.hash, at=format_time(checkpoint.at), key_id=checkpoint.key_id
    )
    current_key = checkpoint.key_id == signer.key_id
    return {
        "checkpoint": checkpoint,
        "current_key": current_key,
        "signature_ok": signature_valid(signer.public_key, checkpoint.signature, payload) if current_key else None,
        "key_id": signer.key_id,
    }


@staff_page(CONSOLE, StaffPermission.AUDIT_VERIFY)
def verify(request: HttpRequest) -> HttpResponse:
    """Walk the whole chain now (``?run=1``) and show where it ends against the latest signed checkpoint; taking
    a checkpoint is a POST (it appends an event)."""
    context: dict[str, Any] = {"checkpoint_form": CheckpointForm()}
    if request.GET.get("run"):
        result = audit_chain_verify()
        context["result"] = {
            "ok": result.ok,
            "count": result.count,
            "bad_seq": result.bad_seq,
            "message": result.describe(),
        }
    facts = _checkpoint_facts()
    context["facts"] = facts
    if "result" in context and facts is not None:
        context["result"]["covers_checkpoint"] = (
            context["result"]["ok"] and facts["checkpoint"].seq <= context["result"]["count"]
        )
    return render(request, "consoles/compliance/verify.html", context)


@require_POST
@staff_page(CONSOLE, StaffPermission.AUDIT_VERIFY)
def checkpoint_take(request: HttpRequest) -> HttpResponse:
    form = CheckpointForm(request.POST)
    done = already_done(request)
    if done:
        return redirect(done)
    if form.is_valid():
        checkpoint = audit_checkpoint_take(actor=actor(request))
        if checkpoint is None:
            messages.error(request, "The audit log holds no event yet; there is nothing to sign.")
        else:
            messages.success(request, f"The chain is signed at seq {checkpoint.seq} (key {checkpoint.key_id}).")
        mark_done(request, reverse("portal:console_verify"))
    else:
        messages.error(request, "This form is out of date: send it again.")
    return redirect("portal:console_verify")


def _bundle_name(tenant: Tenant | None, since: datetime | None, until: datetime | None) -> str:
    parts = ["ladder-audit", tenant.slug if tenant else "all"]
    parts += [f"{moment:%Y%m%dT%H%M}" for moment in (since, until) if moment is not None]
    return "-".join(parts) + ".jsonl"


@staff_page(CONSOLE, StaffPermission.AUDIT_VIEW)
def bundle(request: HttpRequest) -> HttpResponseBase:
    """A signed bundle of the audit log for a tenant and a time range, streamed as it is made (a POST: it may
    sign a checkpoint to end at). ``python -m compliance.domain.verify`` checks it offline."""
    form = BundleForm(request.POST or None, tenants=_tenant_choices())
    if request.method == "POST" and form.is_valid():
        tenant = _tenant(form.cleaned_data["tenant"])
        since, until = form.cleaned_data["since"], form.cleaned_data["until"]
        chunks = audit_export_stream(tenant=tenant, since=since, until=until)
        response = StreamingHttpResponse(chunks, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{_bundle_name(tenant, since, until)}"'
        return response
    return render(request, "consoles/compliance/bundle.html", {"form": form}, status=422 if form.errors else 200)


# --- legal holds ------------------------------------------------------------------------------------------------


def _scope(data: dict[str, Any]) -> AssetScope:
    return AssetScope(
        categories=data.get("categories") or [],
        created_from=data.get("created_from"),
        created_to=data.get("created_to"),
    )


@staff_page(CONSOLE, StaffPermission.HOLD_VIEW)
def holds(request: HttpRequest) -> HttpResponse:
    """The register, and the way to place a hold: preview what a scope preserves (by category and bytes), then
    place it with a matter and a reason."""
    tenants = _tenant_choices()
    step = request.POST.get("step", "")
    scope_form = HoldScopeForm(request.POST if step == "preview" else None, tenants=tenants)
    place_form: HoldPlaceForm | None = None
    preview = None
    preview_volumes: list[Any] = []
    status = 200
    if request.method == "POST" and step == "preview":
        if scope_form.is_valid():
            tenant = _tenant(scope_form.cleaned_data["tenant"])
            if tenant is None:
                scope_form.add_error("tenant", "Choose a tenant.")
            else:
                try:
                    preview = legal_hold_preview(tenant=tenant, scope=_scope(scope_form.cleaned_data))
                    preview_volumes = volumes_in_scope(tenant=tenant, scope=_scope(scope_form.cleaned_data))
                except ServiceError as error:
                    error_onto(scope_form, error)
                else:
                    place_form = HoldPlaceForm(initial=_scope_initial(scope_form.cleaned_data), tenants=tenants)
        status = 422 if scope_form.errors else 200
    elif request.method == "POST" and step == "place":
        done = already_done(request)
        if done:
            return redirect(done)
        if not staff_may(request.user, StaffPermission.HOLD_PLACE):  # previewing is reading; placing is not
            return forbidden(request, f"Placing a hold needs the {StaffPermission.HOLD_PLACE.value} permission.")
        place_form = HoldPlaceForm(request.POST, tenants=tenants)
        if place_form.is_valid():
            data = place_form.cleaned_data
            tenant = _tenant(data["tenant"])
            if tenant is None:
                place_form.add_error("tenant", "Choose a tenant.")
            else:
                try:
                    hold = legal_hold_create(
                        tenant=tenant,
                        matter=data["matter"],
                        reason=data["reason"],
                        scope=_scope(data),
                        lock_until=data["lock_until"],
                        actor=actor(request),
                    )
                except ServiceError as error:
                    error_onto(place_form, error)
                else:
                    where = reverse("portal:console_holds") + f"#hold-{hold.pk}"
                    mark_done(request, where)
                    messages.success(request, f"Hold {hold.pk} ({hold.matter}) is placed on {tenant.slug}.")
                    return redirect(where)
        if place_form.errors:
            preview = _preview_of(place_form)
        status = 422 if place_form.errors else 200
    register_rows = legal_hold_register(list(holds_of().order_by("-pk")[:100]))
    context = {
        "scope_form": scope_form,
        "place_form": place_form,
        "preview": preview,
        "preview_volumes": preview_volumes,
        "scope": _scope_shown(place_form),
        "register": register_rows,
        "may_place": staff_may(request.user, StaffPermission.HOLD_PLACE),
        "may_release": staff_may(request.user, StaffPermission.HOLD_RELEASE),
    }
    return render(request, "consoles/compliance/holds.html", context, status=status)


def _scope_shown(form: HoldPlaceForm | None) -> dict[str, Any]:
    """The scope a place form carries, to state on the page beside the preview."""
    if form is None:
        return {}
    if form.is_bound and hasattr(form, "cleaned_data"):
        return {k: form.cleaned_data.get(k) for k in ("tenant", "categories", "created_from", "created_to")}
    return {k: form.initial.get(k) for k in ("tenant", "categories", "created_from", "created_to")}


def _scope_initial(data: dict[str, Any]) -> dict[str, Any]:
    return {k: data.get(k) for k in ("tenant", "categories", "created_from", "created_to")}


def _preview_of(form: HoldPlaceForm) -> Any:
    """What the scope on a refused place form preserves, shown again beside its errors (when the scope reads)."""
    tenant = _tenant(form.cleaned_data.get("tenant", "")) if hasattr(form, "cleaned_data") else None
    if tenant is None:
        return None
    try:
        return legal_hold_preview(tenant=tenant, scope=_scope(form.cleaned_data))
    except ServiceError:
        return None


@staff_page(CONSOLE, StaffPermission.HOLD_RELEASE)
def hold_release(request: HttpRequest, hold_id: int) -> HttpResponse:
    """Release a hold, with a reason, after a confirmation; a locked hold is refused in the service's words."""
    hold = get_object_or_404(LegalHold.objects.select_related("tenant"), pk=hold_id)
    if request.method == "POST":
        done = already_done(request)
        if done:
            return redirect(done)
    form = ReasonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            legal_hold_release(hold=hold, reason=form.cleaned_data["reason"], actor=actor(request))
        except ServiceError as error:
            error_onto(form, error)
        else:
            where = reverse("portal:console_holds") + f"#hold-{hold.pk}"
            mark_done(request, where)
            messages.success(request, f"Hold {hold.pk} ({hold.matter}) is released.")
            return redirect(where)
    entry = legal_hold_register([hold])[0]
    context = {"entry": entry, "form": form, "active": hold.state == HoldState.ACTIVE}
    return render(request, "consoles/compliance/hold_release.html", context, status=422 if form.errors else 200)


# --- erasure requests and residency -----------------------------------------------------------------------------


@staff_page(CONSOLE, StaffPermission.ERASURE_VIEW)
def erasures(request: HttpRequest) -> HttpResponse:
    """Erasure requests across tenants, newest first, with what was erased, what a legal hold withheld (and which
    hold: its matter too, which is the compliance team's own) and what was derived from erased data. A volume's
    asset is shown as the volume: name, region, size and state (``deleting`` until its key is shredded)."""
    requests = (
        ErasureRequest.objects.select_related("tenant")
        .prefetch_related(
            Prefetch(
                "items",
                queryset=ErasureItem.objects.select_related("asset__volume__region", "hold").order_by("pk"),
            )
        )
        .order_by("-pk")
    )
    tenant = request.GET.get("tenant", "")
    if tenant:
        requests = requests.filter(tenant__slug=tenant)
    rows = []
    for r in requests[:100]:
        items = list(r.items.all())
        rows.append(
            {
                "request": r,
                "categories": r.scope.get("categories") or [],
                "deleted": [i.asset for i in items if i.outcome == ErasureOutcome.DELETED],
                "withheld": [i for i in items if i.outcome == ErasureOutcome.WITHHELD],
                "affected": [i.asset for i in items if i.outcome == ErasureOutcome.AFFECTED],
            }
        )
    context = {"rows": rows, "tenant": tenant, "tenants": _tenant_choices()}
    return render(request, "consoles/compliance/erasures.html", context)


@staff_page(CONSOLE, StaffPermission.DATA_ASSET_VIEW)
def residency(request: HttpRequest) -> HttpResponse:
    """Every tenant's residency report (where its compute ran and its data lives, judged against its residency
    now), tenants with violations first."""
    reports: list[dict[str, Any]] = [
        {"tenant": t, "report": residency_report(tenant=t)} for t in Tenant.objects.order_by("slug")
    ]
    reports.sort(key=lambda r: (r["report"]["violations"] == 0, r["tenant"].slug))
    flagged = sum(1 for r in reports if r["report"]["violations"])
    return render(request, "consoles/compliance/residency.html", {"reports": reports, "flagged": flagged})


urlpatterns = [
    path("console/compliance/", audit, name="console_audit"),
    path("console/compliance/verify", verify, name="console_verify"),
    path("console/compliance/checkpoint", checkpoint_take, name="console_checkpoint"),
    path("console/compliance/bundle", bundle, name="console_bundle"),
    path("console/compliance/holds", holds, name="console_holds"),
    path("console/compliance/holds/<int:hold_id>/release", hold_release, name="console_hold_release"),
    path("console/compliance/erasures", erasures, name="console_erasures"),
    path("console/compliance/residency", residency, name="console_residency"),
]
