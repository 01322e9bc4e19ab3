import os
from typing import Any

from celery import current_app
from celery.signals import before_task_publish, task_postrun, task_prerun, worker_init, worker_process_shutdown
from django.apps import AppConfig
from django.conf import settings

from core import logs, metrics


class CoreConfig(AppConfig):
    """The base every app builds on: errors, the actor, locks and their order, task enqueueing, the audit record."""

    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # Every process knows every task by name, as a worker does: a service below its task's module queues it
        # by name (``core.tasks.enqueue``) instead of importing the module that calls it back.
        current_app.autodiscover_tasks(force=True)
        # Structured logs (core/logs.py): structlog renders through the stdlib formatter settings.LOGGING sets up;
        # tasks carry their id and the id of the request that queued them.
        logs.structlog_configure()
        before_task_publish.connect(logs.task_publish, dispatch_uid="ladder-log-publish")
        task_prerun.connect(logs.task_started, dispatch_uid="ladder-log-task-started")
        task_postrun.connect(logs.task_finished, dispatch_uid="ladder-log-task-finished")
        worker_init.connect(_worker_metrics, dispatch_uid="ladder-worker-metrics")
        worker_process_shutdown.connect(_worker_process_gone, dispatch_uid="ladder-worker-process-gone")
        # Keys kept in Vault are unwrapped at start: a process that cannot have them stops here, saying why.
        if settings.LADDER_KEY_SOURCE == "vault":
            from core.keys import keys_load

            keys_load()


def _worker_metrics(**_: Any) -> None:
    if settings.LADDER_WORKER_METRICS_PORT:
        metrics.worker_metrics_serve(settings.LADDER_WORKER_METRICS_PORT)


def _worker_process_gone(**_: Any) -> None:
    metrics.process_dead(os.getpid())
