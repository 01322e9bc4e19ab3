"""The Celery application. Tasks are discovered in each app's ``tasks.py``; configuration comes from the
``CELERY_*`` Django settings, so the broker, time limits and beat schedule live in one place.

With ``LADDER_BEAT_SCHEDULER=redbeat`` beat keeps its schedule in Redis behind celery-redbeat's lock. Redbeat reads
its own keys (``redbeat_redis_url``, ``redbeat_key_prefix``, ``redbeat_lock_timeout``) by their bare names: given
as ``CELERY_REDBEAT_*`` settings they are found, but redbeat believes them unset and warns that it falls back to
the broker's URL. So they are set on the app's configuration here, once Celery has read the settings."""

import os
from typing import Any

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("ladder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def redbeat_configure(sender: Celery, **kwargs: Any) -> None:
    if settings.LADDER_BEAT_SCHEDULER == "redbeat":
        sender.conf.update(
            redbeat_redis_url=settings.LADDER_BEAT_REDIS_URL,
            redbeat_key_prefix=settings.LADDER_BEAT_KEY_PREFIX,
            redbeat_lock_timeout=settings.LADDER_BEAT_LOCK_SECONDS,
        )
