from celery import current_app
from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    """The base every app builds on: errors, the actor, locks and their order, task enqueueing, the audit record."""

    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Every process knows every task by name, as a worker does: a service below its task's module queues it
        # by name (``core.tasks.enqueue``) instead of importing the module that calls it back.
        current_app.autodiscover_tasks(force=True)
        # Keys kept in Vault are unwrapped at start: a process that cannot have them stops here, saying why.
        if settings.LADDER_KEY_SOURCE == "vault":
            from core.keys import keys_load

            keys_load()
