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
	$(BIN)/python manage.py runserver 127.0.0.1:8000

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

# No test may depend on today's date: the suite runs on the real clock, then again with the wall clock moved to
# TEST_CLOCK (tests/support/clock.py), a month end in another year. The benchmarks' smoke tests are left out of the
# second run: they run in subprocesses, which the moved clock does not reach.
TEST_CLOCK ?= 2027-02-28T23:59:00Z

test: export DJANGO_SETTINGS_MODULE = config.settings_test
test: export LADDER_TEST_CLOCK =
test: lint
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest
	$(BIN)/pytest --clock=$(TEST_CLOCK) --ignore=tests/bench

# Production-style processes (with DATABASE_URL and CELERY_BROKER_URL set):
worker: $(STAMP)
	$(BIN)/celery -A config worker --loglevel=INFO

beat: $(STAMP)
	$(BIN)/celery -A config beat --loglevel=INFO
