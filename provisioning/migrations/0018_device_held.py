"""When each device was held: from its allocation's creation for the rows written before, and until its allocation
last changed state for the ones already given back (the closest the rows knew)."""

import django.utils.timezone
from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def backfill(apps, schema_editor):
    Device = apps.get_model("provisioning", "AllocationDevice")
    Allocation = apps.get_model("provisioning", "Allocation")
    created = Allocation.objects.filter(pk=OuterRef("allocation_id")).values("created_at")[:1]
    changed = Allocation.objects.filter(pk=OuterRef("allocation_id")).values("state_changed_at")[:1]
    Device.objects.update(held_since=Subquery(created))
    Device.objects.filter(active=False).update(released_at=Subquery(changed))


class Migration(migrations.Migration):
    dependencies = [
        ("provisioning", "0017_cold_starts"),
    ]

    operations = [
        migrations.AddField(
            model_name="allocationdevice",
            name="held_since",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="allocationdevice",
            name="released_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
