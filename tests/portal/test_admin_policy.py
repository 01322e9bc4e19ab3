"""The admin cannot change what the services audit: tenants, memberships, billing accounts and invoices are shown
read-only (a POST to their change, add or delete pages, or the list's bulk delete, changes nothing and writes no
audit event), and nodes are not in the admin at all (their states change through the operators' API and console).
Through the real admin views, signed in as a superuser past the second factor."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.forms.models import model_to_dict

from billing.models import BillingAccount, Invoice
from core.admin import ViewOnly
from core.models import AuditEvent
from provisioning.models import Node
from tenancy.models import Membership, Tenant

AUDITED = [Tenant, Membership, BillingAccount, Invoice]


def _rows(acme: Any) -> list[Any]:
    invoice = Invoice.objects.create(
        tenant=acme, stripe_id="in_admin", status="open", currency="usd", subtotal=1200, total=1200, amount_due=1200
    )
    return [
        acme,
        Membership.objects.get(tenant=acme, user__username="alice"),
        BillingAccount.objects.get(tenant=acme),
        invoice,
    ]


def _url(obj: Any, view: str) -> str:
    meta = obj._meta
    return f"/admin/{meta.app_label}/{meta.model_name}/{obj.pk}/{view}/"


def test_the_audited_models_are_view_only_admin_pages() -> None:
    for model in AUDITED:
        assert isinstance(admin.site._registry[model], ViewOnly), model


def test_an_admin_post_changes_none_of_them_nor_the_audit_log(admin_client: Any, alice: Any, acme: Any) -> None:
    rows = _rows(acme)
    before = [model_to_dict(row) for row in rows]
    events = AuditEvent.objects.count()
    for row in rows:
        meta = row._meta
        page = admin_client.get(_url(row, "change"))
        assert page.status_code == 200, meta.label  # shown, read-only
        assert b'name="_save"' not in page.content
        changed = {**{k: v for k, v in model_to_dict(row).items() if v is not None}, "name": "Renamed", "role": "owner"}
        changed.update({"state": "suspended", "status": "paid", "budget_monthly": "1", "currency": "eur"})
        assert admin_client.post(_url(row, "change"), changed).status_code == 403, meta.label
        assert admin_client.post(_url(row, "delete"), {"post": "yes"}).status_code == 403, meta.label
        assert admin_client.post(f"/admin/{meta.app_label}/{meta.model_name}/add/", changed).status_code == 403
        admin_client.post(
            f"/admin/{meta.app_label}/{meta.model_name}/",
            {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
        )
    for row, was in zip(rows, before, strict=True):
        row.refresh_from_db()
        assert model_to_dict(row) == was, row._meta.label
    assert AuditEvent.objects.count() == events


def test_nodes_are_not_in_the_admin(admin_client: Any) -> None:
    assert Node not in admin.site._registry
    assert admin_client.get("/admin/provisioning/node/").status_code == 404
