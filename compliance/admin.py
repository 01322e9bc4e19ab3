"""The audit log in the admin: view only; nothing here can change or delete an event."""

from typing import Any

from django.contrib import admin

from compliance.models import AuditCheckpoint, AuditEvent


class ViewOnly:
    """Neither add, change nor delete: the log and its signatures are written by the services only."""

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ViewOnly, admin.ModelAdmin[AuditCheckpoint]):
    list_display = ["seq", "at", "key_id"]


@admin.register(AuditEvent)
class AuditEventAdmin(ViewOnly, admin.ModelAdmin[AuditEvent]):
    list_display = ["seq", "at", "action", "actor_label", "tenant", "target_type", "target_id"]
    list_filter = ["actor_type"]
    search_fields = ["action", "actor_label"]
