"""The audit log's models now live in ``core`` (see core 0001); the tables stay where they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("compliance", "0004_data_assets"),
        ("core", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="AuditChainHead"),
            ],
        ),
    ]
