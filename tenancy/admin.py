"""Admin pages for operators, all read-only: a tenant's state and quota, its members and their roles, and API keys
change through the services (audited, under the tenant's lock): the API, the portal and the operators' console."""

from django.contrib import admin

from core.admin import ViewOnly
from tenancy.models import ApiKey, Membership, Tenant


@admin.register(Tenant)
class TenantAdmin(ViewOnly, admin.ModelAdmin[Tenant]):
    list_display = ["slug", "name", "state", "created_at"]
    list_filter = ["state"]
    search_fields = ["slug", "name"]


@admin.register(Membership)
class MembershipAdmin(ViewOnly, admin.ModelAdmin[Membership]):
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
