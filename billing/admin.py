"""Operators keep the price book here (new prices go through ``price_set``, audited; a storage price per GB-hour is
shown per GB-month beside it, and is better scheduled per GB-month: ``/api/v1/ops/storage-prices`` or ``manage.py
storage_price_set``); finance reads rollups and their Stripe outbox state. Billing accounts and invoices are
read-only: an account changes through its services, an invoice is Stripe's, mirrored by the webhooks."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from billing.models import BillingAccount, Invoice, Notification, Sku, SkuPrice, UsageRollup
from billing.services.accounts import price_set
from core.actor import Actor
from core.admin import ViewOnly


class SkuPriceInline(admin.TabularInline[SkuPrice, Sku]):
    model = SkuPrice
    extra = 1
    fields = ("effective_from", "unit_price_per_hour", "per_gb_month", "stripe_meter_id", "stripe_price_id")
    readonly_fields = ("per_gb_month", "stripe_meter_id", "stripe_price_id")

    @admin.display(description="per GB-month (storage)")
    def per_gb_month(self, obj: SkuPrice) -> str:
        # Storage is quoted per GB-month and kept per GB-hour: the quoted price is shown beside the kept one.
        if obj.pk is None or not obj.sku.is_storage:
            return "-"
        return str(obj.per_gb_month)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a price is never edited: schedule a new one

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Sku)
class SkuAdmin(admin.ModelAdmin[Sku]):
    list_display = ("code", "rung", "gpu_model", "unit", "mig_profile", "storage_kind", "region", "currency")
    list_filter = ("rung", "unit", "storage_kind", "region")
    readonly_fields = ("code", "stripe_product_id")
    inlines = [SkuPriceInline]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        # New prices go through the service (validated, audited), not a bare save.
        for price in formset.save(commit=False):
            price_set(
                sku=form.instance,
                unit_price_per_hour=price.unit_price_per_hour,
                effective_from=price.effective_from,
                actor=Actor.for_user(request.user),
            )


@admin.register(UsageRollup)
class UsageRollupAdmin(admin.ModelAdmin[UsageRollup]):
    list_display = ("id", "tenant", "sku", "window_ms", "seq", "quantity_milli", "meter_value", "push_state")
    list_filter = ("push_state",)
    readonly_fields = [f.name for f in UsageRollup._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Invoice)
class InvoiceAdmin(ViewOnly, admin.ModelAdmin[Invoice]):
    list_display = ("stripe_id", "tenant", "status", "period_start", "total", "currency")
    list_filter = ("status",)
    readonly_fields = [f.name for f in Invoice._meta.fields]


@admin.register(BillingAccount)
class BillingAccountAdmin(ViewOnly, admin.ModelAdmin[BillingAccount]):
    list_display = ("tenant", "currency", "stripe_customer_id")


admin.site.register(Notification)
