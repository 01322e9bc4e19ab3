"""The detail export's index reads the resource of every piece: the allocation, or the volume or snapshot of
storage. Built beside the old one with CREATE INDEX CONCURRENTLY on PostgreSQL (metering goes on writing), the old
one dropped the same way, and the new one takes its name; plain statements elsewhere."""

from typing import Any

from django.db import migrations, models

FIELDS = ["tenant", "sku", "window_ms", "allocation", "volume", "snapshot", "price", "batch", "quantity_milli"]
OLD_FIELDS = ["tenant", "sku", "window_ms", "allocation", "price", "batch", "quantity_milli"]


def _online(schema_editor: Any) -> dict[str, bool]:
    """``concurrently`` where the database has it (PostgreSQL's schema editor alone takes the argument)."""
    return {"concurrently": True} if schema_editor.connection.vendor == "postgresql" else {}


class AddIndexOnline(migrations.AddIndex):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index, **_online(schema_editor))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index, **_online(schema_editor))


class RemoveIndexOnline(migrations.RemoveIndex):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.remove_index(model, index, **_online(schema_editor))

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.add_index(model, index, **_online(schema_editor))


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("billing", "0008_storage_pricing"),
    ]

    operations = [
        AddIndexOnline(
            model_name="usageinterval",
            index=models.Index(condition=models.Q(batch__isnull=False), fields=FIELDS, name="usage_export_owners"),
        ),
        RemoveIndexOnline(model_name="usageinterval", name="usage_export"),
        migrations.RenameIndex(model_name="usageinterval", new_name="usage_export", old_name="usage_export_owners"),
    ]
