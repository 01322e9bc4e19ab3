"""The export indexes (billing.selectors.exports): built with CREATE INDEX CONCURRENTLY on PostgreSQL, so metering goes on
writing while they build on a large ledger; a plain CREATE INDEX elsewhere."""

from typing import Any

from django.db import migrations, models


class AddIndexOnline(migrations.AddIndex):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.add_index(model, self.index, concurrently=True)
        else:
            schema_editor.add_index(model, self.index)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.remove_index(model, self.index, concurrently=True)
        else:
            schema_editor.remove_index(model, self.index)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("billing", "0005_export_job"),
        ("provisioning", "0013_capacity_sample"),
        ("tenancy", "0003_ssh_keys"),
    ]

    operations = [
        AddIndexOnline(
            model_name="usageinterval",
            index=models.Index(
                condition=models.Q(("batch__isnull", False)),
                fields=["tenant", "sku", "window_ms", "allocation", "price", "batch", "quantity_milli"],
                name="usage_export",
            ),
        ),
        AddIndexOnline(
            model_name="usagerollup",
            index=models.Index(
                fields=["tenant", "sku", "window_ms", "price", "seq", "quantity_milli", "closed_at", "batch"],
                name="rollup_export",
            ),
        ),
    ]
