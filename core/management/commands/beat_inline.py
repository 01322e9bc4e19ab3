"""``manage.py beat_inline [--once]``: the beat schedule, run in this process, for the embedded default.

With ``LADDER_TASKS_INLINE=1`` there is no broker and no worker, so nothing would reconcile allocations, close
usage windows or sweep retention. ``make run`` starts this beside the web server: every entry of
``CELERY_BEAT_SCHEDULE`` runs here when due, one after another. In production, ``celery beat`` and workers do it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Run the beat schedule in this process (embedded default: LADDER_TASKS_INLINE=1)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Run every entry once, then exit.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LADDER_TASKS_INLINE:
            raise CommandError("beat_inline runs tasks in this process; without LADDER_TASKS_INLINE=1 run celery beat.")
        every = {name: float(entry["schedule"]) for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}
        due = dict.fromkeys(every, time.monotonic())
        while True:
            for name in sorted(due, key=due.__getitem__):
                if due[name] > time.monotonic():
                    continue
                self._run(name, settings.CELERY_BEAT_SCHEDULE[name]["task"])
                due[name] = time.monotonic() + every[name]
            if options["once"]:
                return
            time.sleep(max(0.0, min(1.0, min(due.values()) - time.monotonic())))

    def _run(self, name: str, task: str) -> None:
        try:
            current_app.tasks[task].apply()
        except Exception:  # one failing entry must not stop the others; it runs again when next due
            log.exception("beat entry %s (%s) failed", name, task)
        else:
            self.stdout.write(f"{name}: ran {task}")
