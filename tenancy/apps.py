from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _staff_groups_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    from tenancy.services import staff_groups_ensure

    staff_groups_ensure(using=using)


class TenancyConfig(AppConfig):
    name = "tenancy"
    verbose_name = "Tenancy"

    def ready(self) -> None:
        # Permissions are created per app after it migrates, so the staff groups are brought up to date on
        # every post_migrate; the function is idempotent and cheap.
        post_migrate.connect(_staff_groups_after_migrate, dispatch_uid="tenancy.staff_groups")
