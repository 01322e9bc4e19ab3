"""The Celery application. Tasks are discovered in each app's ``tasks.py``; configuration comes from the
``CELERY_*`` Django settings, so the broker, time limits and beat schedule live in one place. A ``redis://``
broker is reached through ``core.broker``'s transport (kombu's, keeping one Redis client per connection pool).

With ``LADDER_BEAT_SCHEDULER=redbeat`` beat keeps its schedule in Redis behind celery-redbeat's lock. Redbeat reads
its own keys (``redbeat_redis_url``, ``redbeat_key_prefix``, ``redbeat_lock_timeout``) by their bare names: given
as ``CELERY_REDBEAT_*`` settings they are found, but redbeat believes them unset and warns that it falls back to
the broker's URL. So they are set on the app's configuration here, once Celery has read the settings."""

import os
from typing import Any
from urllib.parse import urlsplit

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("ladder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def broker_configure(sender: Celery, **kwargs: Any) -> None:
    # A rediss:// broker keeps kombu's transport: its TLS defaults come with that scheme's name.
    if urlsplit(settings.CELERY_BROKER_URL).scheme == "redis":
        sender.conf.broker_transport = "core.broker:Transport"


@app.on_after_configure.connect
def redbeat_configure(sender: Celery, **kwargs: Any) -> None:
    if settings.LADDER_BEAT_SCHEDULER == "redbeat":
        sender.conf.update(
            redbeat_redis_url=settings.LADDER_BEAT_REDIS_URL,
            redbeat_key_prefix=settings.LADDER_BEAT_KEY_PREFIX,
            redbeat_lock_timeout=settings.LADDER_BEAT_LOCK_SECONDS,
        )
