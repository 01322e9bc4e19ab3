# syntax=docker/dockerfile:1
# Ladder's production image: one image for the web server, the Celery workers, beat and the migration Job
# (docs/operations.md, "Installing"). Build: docker build -t registry.example/ladder:TAG .
#
# - build: every dependency from requirements.lock, checked against its hashes, into /opt/venv; then the project
#   itself without resolving anything (as `make venv` does); bytecode compiled; static files collected into
#   /app/staticfiles (STATIC_ROOT), which the web Pod's nginx serves (Django does not serve them in production).
# - runtime: the slim Python image, the venv and the source, run as the numeric user 10001. Nothing is written
#   under / at run time: the root filesystem may be read-only. Writable: /tmp (a tmpfs or emptyDir) with the
#   Prometheus multiprocess directory /tmp/metrics and gunicorn's control socket (XDG_RUNTIME_DIR: it would
#   otherwise go under the user's home, which does not exist), and the volume at /var/lib/ladder (export files
#   and, without S3, asset storage).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
COPY requirements.lock /tmp/requirements.lock
RUN /opt/venv/bin/pip install --require-hashes -r /tmp/requirements.lock
WORKDIR /app
COPY . /app
# The project in editable mode, as `make venv` installs it: the venv maps the packages to /app, which the runtime
# stage copies to the same place. --no-deps: nothing beyond the lock; --no-build-isolation: the locked setuptools.
RUN /opt/venv/bin/pip install --no-deps --no-build-isolation -e /app \
    && /opt/venv/bin/python -m compileall -q /app \
    && DEBUG=1 /opt/venv/bin/python manage.py collectstatic --noinput

FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 ladder \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ladder \
    && install -d -o 10001 -g 10001 /var/lib/ladder /var/lib/ladder/exports /var/lib/ladder/storage /tmp/metrics
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    XDG_RUNTIME_DIR=/tmp \
    DJANGO_SETTINGS_MODULE=config.settings \
    PROMETHEUS_MULTIPROC_DIR=/tmp/metrics \
    LADDER_EXPORT_DIR=/var/lib/ladder/exports \
    LADDER_STORAGE_URL=file:///var/lib/ladder/storage/{region}
USER 10001:10001
EXPOSE 8000
# Kubernetes probes /healthz (liveness) and /readyz (readiness) itself (deploy/kustomize/base/web.yaml); this is
# for plain `docker run`. Host: localhost, which ALLOWED_HOSTS must list (as the manifests' does).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:8000/healthz', headers={'Host': 'localhost'}), timeout=4)"]
CMD ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi:application"]
