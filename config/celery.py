"""The Celery application. Tasks are discovered in each app's ``tasks.py``; configuration comes from the
``CELERY_*`` Django settings, so the broker, time limits and beat schedule live in one place."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("ladder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
