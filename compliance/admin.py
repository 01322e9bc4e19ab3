"""The audit log and the data lifecycle in the admin: view only; nothing here can change or delete anything."""

from django.contrib import admin

from compliance.models import AuditCheckpoint, DataAsset, ErasureRequest, LegalHold
from core.admin import ViewOnly
from core.models import AuditEvent


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ViewOnly, admin.ModelAdmin[AuditCheckpoint]):
    list_display = ["seq", "at", "key_id"]


@admin.register(AuditEvent)
class AuditEventAdmin(ViewOnly, admin.ModelAdmin[AuditEvent]):
    list_display = ["seq", "at", "action", "actor_label", "tenant", "target_type", "target_id"]
    list_filter = ["actor_type"]
    search_fields = ["action", "actor_label"]


# The data lifecycle is changed through its services only (every deletion asks the holds, under the tenant's lock):
# an administrator's delete button would be the one path around a legal hold.


@admin.register(DataAsset)
class DataAssetAdmin(ViewOnly, admin.ModelAdmin[DataAsset]):
    list_display = ["id", "tenant", "category", "name", "region", "size_bytes", "created_at", "state"]
    list_filter = ["category", "state"]
    search_fields = ["name"]
    exclude = ["wrapped_key"]


@admin.register(LegalHold)
class LegalHoldAdmin(ViewOnly, admin.ModelAdmin[LegalHold]):
    list_display = ["id", "tenant", "matter", "state", "created_at", "lock_until"]
    list_filter = ["state"]


@admin.register(ErasureRequest)
class ErasureRequestAdmin(ViewOnly, admin.ModelAdmin[ErasureRequest]):
    list_display = ["id", "tenant", "state", "on_behalf_of", "created_at", "completed_at"]
    list_filter = ["state"]
