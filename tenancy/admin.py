"""Admin pages for operators: tenants and memberships are editable; API keys are read-only (revoke via API)."""

from django.contrib import admin

from tenancy.models import ApiKey, Membership, Tenant


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin[Tenant]):
    list_display = ["slug", "name", "state", "created_at"]
    list_filter = ["state"]
    search_fields = ["slug", "name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    list_display = ["prefix", "name", "user", "tenant", "created_at", "expires_at", "revoked_at", "last_used_at"]
    readonly_fields = [f.name for f in ApiKey._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_delete_permission(self, request: object, obj: object = None) -> bool:
        return False
