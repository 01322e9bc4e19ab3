from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The base every app builds on: errors, the actor, locks and their order, task enqueueing, the audit record."""

    name = "core"
    verbose_name = "Core"
