# The two commands: `make run` serves the product on the embedded default; `make test` runs every check.
# Both create or update .venv from pyproject.toml first; that step is skipped when pyproject.toml is unchanged.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint venv worker beat

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

run: export DEBUG = 1
run: export LADDER_TASKS_INLINE = 1
run: $(STAMP)
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo ""
	@echo "Ladder is starting at http://127.0.0.1:8000"
	@echo "  API docs:  http://127.0.0.1:8000/api/docs/"
	@echo "  OpenAPI:   http://127.0.0.1:8000/api/schema/"
	@echo "  Admin:     http://127.0.0.1:8000/admin/  (staff logins above)"
	@echo "  Health:    http://127.0.0.1:8000/healthz  /readyz"
	@echo "  Try:       curl -H 'Authorization: Bearer <alice key>' http://127.0.0.1:8000/api/v1/tenant"
	@echo ""
	@# The beat schedule runs in a process of its own beside the server (reconcile, windows, sweeps); it stops with it.
	$(BIN)/python manage.py beat_inline > var/beat_inline.log 2>&1 & trap 'kill $$!' EXIT INT TERM; \
		$(BIN)/python manage.py runserver 127.0.0.1:8000

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

test: export DJANGO_SETTINGS_MODULE = config.settings_test
test: lint
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

# Production-style processes (with DATABASE_URL and CELERY_BROKER_URL set):
worker: $(STAMP)
	$(BIN)/celery -A config worker --loglevel=INFO

beat: $(STAMP)
	$(BIN)/celery -A config beat --loglevel=INFO
