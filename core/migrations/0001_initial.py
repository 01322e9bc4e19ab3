"""The audit log's models move from ``compliance`` to the base app ``core``: state only, the tables stay."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("tenancy", "0002_tenant_policy"),
        ("compliance", "0004_data_assets"),  # the tables exist, made by compliance 0001
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="AuditChainHead",
                    fields=[
                        ("id", models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                        ("seq", models.BigIntegerField(default=0)),
                        (
                            "hash",
                            models.CharField(
                                default="0000000000000000000000000000000000000000000000000000000000000000",
                                max_length=64,
                            ),
                        ),
                    ],
                    options={"db_table": "compliance_auditchainhead"},
                ),
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("seq", models.BigIntegerField(primary_key=True, serialize=False)),
                        ("at", models.DateTimeField()),
                        (
                            "actor_type",
                            models.CharField(
                                choices=[("user", "User"), ("api_key", "Api Key"), ("system", "System")], max_length=16
                            ),
                        ),
                        ("actor_id", models.CharField(max_length=64)),
                        ("actor_label", models.CharField(max_length=150)),
                        ("api_key_prefix", models.CharField(blank=True, max_length=16)),
                        ("action", models.CharField(max_length=100)),
                        ("target_type", models.CharField(max_length=100)),
                        ("target_id", models.CharField(max_length=100)),
                        ("data", models.JSONField(default=dict)),
                        ("prev_hash", models.CharField(max_length=64)),
                        ("hash", models.CharField(max_length=64, unique=True)),
                        (
                            "tenant",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="audit_events",
                                to="tenancy.tenant",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "compliance_auditevent",
                        "ordering": ["seq"],
                        "permissions": [("verify_auditchain", "Can verify the audit chain")],
                        "indexes": [
                            models.Index(fields=["tenant", "seq"], name="compliance__tenant__7b92ed_idx"),
                            models.Index(fields=["action"], name="compliance__action_f0a43e_idx"),
                            models.Index(fields=["at"], name="compliance__at_6f9011_idx"),
                            models.Index(fields=["actor_label"], name="compliance__actor_l_46a8f0_idx"),
                        ],
                    },
                ),
            ],
        ),
    ]
