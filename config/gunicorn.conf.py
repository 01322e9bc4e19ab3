"""gunicorn's configuration for Ladder's web processes: ``gunicorn -c config/gunicorn.conf.py config.wsgi``.

- ``LADDER_BIND`` (default ``0.0.0.0:8000``) and ``LADDER_WEB_WORKERS`` (default 2) come from the environment;
  ``LADDER_WEB_TIMEOUT`` (default 60 s) bounds a request (a followed log streams for at most
  ``LADDER_LOG_FOLLOW_SECONDS``; keep the timeout above it).
- One thread per worker process: the product's per-process state (the fleet cache, the placement section) and the
  metrics' multiprocess files assume a process serves one request at a time.
- Metrics: with ``PROMETHEUS_MULTIPROC_DIR`` set, every worker writes its counters there and ``/metrics`` adds them
  up; the directory is emptied when the server starts (a previous run's files would count twice) and a worker that
  exits is marked dead so its live gauges go.
- No access log: the product writes one JSON line per request itself (``core.requests``, with its request id);
  gunicorn's own messages go to stderr.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from prometheus_client import multiprocess

bind = os.environ.get("LADDER_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("LADDER_WEB_WORKERS", "2"))
threads = 1
timeout = int(os.environ.get("LADDER_WEB_TIMEOUT", "60"))
graceful_timeout = 30
accesslog = None
errorlog = "-"
# Django loads in each worker after the fork: database connections and the Celery connection pool are never shared
# between processes.
preload_app = False


def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for entry in path.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(worker.pid)
