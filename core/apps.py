from celery import current_app
from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The base every app builds on: errors, the actor, locks and their order, task enqueueing, the audit record."""

    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Every process knows every task by name, as a worker does: a service below its task's module queues it
        # by name (``core.tasks.enqueue``) instead of importing the module that calls it back.
        current_app.autodiscover_tasks(force=True)
