# The two commands: `make run` serves the product on the embedded default; `make test` runs every check.
# Both create or update .venv first, from requirements.lock: every package at its pinned version, checked against
# its hashes, then the project itself. That step is skipped while requirements.lock and pyproject.toml are unchanged.
# `make lock` recompiles requirements.lock from the ranges in pyproject.toml.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCK := requirements.lock
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: run test test-fast lint venv lock sdk browser prometheus worker beat bench-data bench-data-check focus-venv focus-lock load faults

venv: $(STAMP)

# The project goes in without resolving dependencies and is built by the locked setuptools (no build isolation),
# so nothing lands in .venv that the lock does not pin.
$(STAMP): $(LOCK) pyproject.toml sdk/pyproject.toml cli/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --require-hashes -r $(LOCK)
	$(PIP) install --quiet --no-deps --no-build-isolation -e . -e ./sdk -e ./cli
	@touch $(STAMP)

# To bump a dependency: edit its range in pyproject.toml, run `make lock`, commit both files. The lock holds the
# runtime dependencies, the dev and cli extras and the build backend, resolved for Python 3.11 on Linux x86_64 from PyPI.
# Pins already in the lock are kept while the ranges allow them; to move to newer releases inside the ranges:
# `make lock LOCKFLAGS='--upgrade-package NAME'` (one package) or `make lock LOCKFLAGS=--upgrade` (all).
LOCKFLAGS ?=
BUILD_REQUIRES := import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))

lock:
	@test -x $(BIN)/uv || $(MAKE) venv
	$(BIN)/python -c '$(BUILD_REQUIRES)' | $(BIN)/uv pip compile --quiet --no-config pyproject.toml - --extra dev --extra cli \
		--generate-hashes --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
		--custom-compile-command 'make lock' $(LOCKFLAGS) --output-file $(LOCK)

run: export DEBUG = 1
run: export LADDER_TASKS_INLINE = 1
run: export LADDER_PROMETHEUS_URL = http://127.0.0.1:9090
run: $(STAMP) prometheus
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	@echo ""
	@echo "Ladder is starting at http://127.0.0.1:8000"
	@echo "  Portal:    http://127.0.0.1:8000/  (alice / alice-ladder-demo, or sign up: the link prints here)"
	@echo "  API docs:  http://127.0.0.1:8000/api/docs/"
	@echo "  OpenAPI:   http://127.0.0.1:8000/api/schema/"
	@echo "  Admin:     http://127.0.0.1:8000/admin/  (staff logins above)"
	@echo "  Health:    http://127.0.0.1:8000/healthz  /readyz"
	@echo "  Metrics:   http://127.0.0.1:9090/  (Prometheus, scraping the simulated fleet's GPU exporter)"
	@echo "  Try:       curl -H 'Authorization: Bearer <alice key>' http://127.0.0.1:8000/api/v1/tenant"
	@echo ""
	@# Beside the server, in processes of their own that stop with it: the beat schedule (reconcile, windows, sweeps)
	@# and, when installed, a Prometheus scraping the simulated fleet's GPU exporter (docs/telemetry.md).
	@mkdir -p var/prometheus
	$(BIN)/python manage.py beat_inline > var/beat_inline.log 2>&1 & beat=$$!; prom=; \
	if command -v "$${LADDER_PROMETHEUS:-prometheus}" >/dev/null; then \
		"$${LADDER_PROMETHEUS:-prometheus}" --config.file=deploy/observability/prometheus-simulated-fleet.yml \
			--storage.tsdb.path=var/prometheus --web.listen-address=127.0.0.1:9090 > var/prometheus.log 2>&1 & prom=$$!; \
	else echo "Prometheus is not installed: GPU metrics are not shown (make prometheus)"; fi; \
	trap 'kill $$beat $$prom 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver 127.0.0.1:8000

# The SDK (sdk/ladder_sdk) and the task file's JSON Schema, regenerated from the API's OpenAPI schema; commit the
# result. The suite fails while they differ from what this would write (tests/cli/test_sdk_drift.py).
sdk: $(STAMP)
	$(BIN)/python sdk/generate.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

# The suite's tiers (tests/support/tiers.py): fast (unit and database tests), system (a browser, real workers,
# gunicorn, subprocesses, validators), bench (the benchmarks' smoke tests) and exclusive (the fault run, which
# restarts the machine's PostgreSQL and Redis). `make test` runs every tier:
#   1. every tier but exclusive, in parallel on every core (pytest-xdist), on DATABASE_URL (SQLite when unset);
#   2. the exclusive tier, alone;
#   3. the embedded default that `make run` uses (SQLite, DATABASE_URL unset) with the wall clock moved to
#      TEST_CLOCK (tests/support/clock.py), a month end in another year: the fast and system tiers, less the tests
#      that need PostgreSQL and those marked once (nothing they check can differ between the passes). No test may depend on today's date or on another test: the passes distribute the tests
#      over the workers differently each time.
# `make test-fast` runs the fast tier alone, for the inner loop.
TEST_CLOCK ?= 2027-02-28T23:59:00Z
TEST_WORKERS ?= auto
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal
FAST := not system and not bench and not exclusive

test: export DJANGO_SETTINGS_MODULE = config.settings_test
test: export LADDER_TEST_CLOCK =
test: lint browser prometheus focus-venv
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(PYTEST) -m "not exclusive"
	$(BIN)/pytest -m exclusive
	env -u DATABASE_URL $(PYTEST) -m "not bench and not exclusive and not postgres and not once" --clock=$(TEST_CLOCK)

test-fast: export DJANGO_SETTINGS_MODULE = config.settings_test
test-fast: export LADDER_TEST_CLOCK =
test-fast: $(STAMP)
	$(PYTEST) -m "$(FAST)"

# The browser tests (tests/browser) drive Debian's Chromium through Playwright (Playwright's own browser download
# is not used). It is installed here when missing, which needs root and apt-get; otherwise install it yourself
# (`sudo apt-get install -y chromium`) or point LADDER_CHROMIUM at a Chromium binary. Until then those tests skip,
# and under CI=true they fail.
browser:
	@if [ -n "$$LADDER_CHROMIUM" ]; then test -x "$$LADDER_CHROMIUM" && exit 0; \
		echo "browser: LADDER_CHROMIUM=$$LADDER_CHROMIUM is not an executable file" >&2; exit 1; fi; \
	command -v chromium >/dev/null && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "browser: Chromium is missing and this is not root on Debian, so it is not installed here." >&2; \
		echo "browser: install it (sudo apt-get install -y chromium) or set LADDER_CHROMIUM=/path/to/chromium;" >&2; \
		echo "browser: until then the browser tests skip (under CI=true they fail)." >&2; \
		exit 0; fi; \
	echo "browser: installing Debian's chromium"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }

# The tests that read GPU and gateway metrics (tests/support/prometheus.py) start a real Prometheus: Debian's package,
# installed here when missing (root and apt-get, as for Chromium); LADDER_PROMETHEUS names another binary. Without one
# those tests skip, and under CI=true they fail.
prometheus:
	@if [ -n "$$LADDER_PROMETHEUS" ]; then test -x "$$LADDER_PROMETHEUS" && exit 0; \
		echo "prometheus: LADDER_PROMETHEUS=$$LADDER_PROMETHEUS is not an executable file" >&2; exit 1; fi; \
	command -v prometheus >/dev/null && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "prometheus: Prometheus is missing and this is not root on Debian, so it is not installed here." >&2; \
		echo "prometheus: install it (sudo apt-get install -y prometheus) or set LADDER_PROMETHEUS=/path/to/prometheus;" >&2; \
		echo "prometheus: until then the tests that read metrics skip (under CI=true they fail)." >&2; \
		exit 0; fi; \
	echo "prometheus: installing Debian's prometheus"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q --no-install-recommends prometheus \
		|| { apt-get update -q && apt-get install -y -q --no-install-recommends prometheus; }

# The FOCUS validator (tests/billing/test_focus_validator.py) runs in an environment of its own: focus-validator 2.x
# needs Python >= 3.12 and numpy < 2 (so pyarrow < 16), which the product's Python 3.11 lock cannot hold. Built from
# requirements-focus.lock (pins and hashes) with Python 3.12, found as `python3.12` on PATH or under pyenv's versions.
FOCUS_VENV := .focus-venv
FOCUS_LOCK := requirements-focus.lock
FOCUS_STAMP := $(FOCUS_VENV)/.installed

focus-venv: $(FOCUS_STAMP)

$(FOCUS_STAMP): $(FOCUS_LOCK)
	@set -e; py=""; \
	for c in $$(command -v python3.12 2>/dev/null) \
		$$(ls -d $$(pyenv root 2>/dev/null || echo $$HOME/.pyenv)/versions/3.12*/bin/python3.12 2>/dev/null); do \
		if "$$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then py="$$c"; break; fi; \
	done; \
	if [ -z "$$py" ]; then echo "focus-venv: Python 3.12 not found (python3.12 on PATH, or pyenv install 3.12)" >&2; \
		exit 1; fi; \
	test -x $(FOCUS_VENV)/bin/python || "$$py" -m venv $(FOCUS_VENV); \
	$(FOCUS_VENV)/bin/python -m pip --disable-pip-version-check install --quiet --require-hashes -r $(FOCUS_LOCK)
	@touch $(FOCUS_STAMP)

# To bump the validator: edit requirements-focus.in, run `make focus-lock`, commit both files.
focus-lock:
	@test -x $(BIN)/uv || $(MAKE) venv
	$(BIN)/uv pip compile --quiet --no-config requirements-focus.in --generate-hashes --python-version 3.12 \
		--python-platform x86_64-unknown-linux-gnu --custom-compile-command 'make focus-lock' --output-file $(FOCUS_LOCK)

# Production-style processes (with DATABASE_URL and CELERY_BROKER_URL set):
worker: $(STAMP)
	$(BIN)/celery -A config worker --loglevel=INFO

beat: $(STAMP)
	$(BIN)/celery -A config beat --loglevel=INFO

# The Alibaba GPU trace the placement benchmark reads (bench/data/alibaba-gpu-v2023/README.md): fetched from its
# source, then checked against the SHA-256 sums committed beside it. TRACE_FROM=DIR copies the files from a local
# folder instead (a machine without access to GitHub).
TRACE_DIR := bench/data/alibaba-gpu-v2023
TRACE_FILES := openb_node_list_gpu_node.csv openb_pod_list_default.csv openb_pod_list_gpushare40.csv \
	openb_pod_list_gpushare100.csv openb_pod_list_multigpu30.csv \
	openb_pod_list_gpuspec20.csv
TRACE_REF ?= 7a6c496e
TRACE_URL ?= https://github.com/alibaba/clusterdata/raw/$(TRACE_REF)/cluster-trace-gpu-v2023/csv
TRACE_FROM ?=

bench-data:
	@set -e; for f in $(TRACE_FILES); do \
		if [ -f "$(TRACE_DIR)/$$f" ]; then continue; fi; \
		if [ -n "$(TRACE_FROM)" ]; then cp "$(TRACE_FROM)/$$f" "$(TRACE_DIR)/$$f.part"; \
		else echo "fetching $$f"; curl -fsSL --retry 3 -o "$(TRACE_DIR)/$$f.part" "$(TRACE_URL)/$$f" \
			|| { rm -f "$(TRACE_DIR)/$$f.part"; exit 1; }; fi; \
		chmod 644 "$(TRACE_DIR)/$$f.part"; mv "$(TRACE_DIR)/$$f.part" "$(TRACE_DIR)/$$f"; \
	done
	@$(MAKE) --no-print-directory bench-data-check

bench-data-check:
	@cd $(TRACE_DIR) && if command -v sha256sum >/dev/null; then sha256sum --check SHA256SUMS; \
		else shasum -a 256 --check SHA256SUMS; fi

# The load run (bench/load): Ladder on loopback as production runs it (a scratch PostgreSQL database, gunicorn, a
# Celery worker and beat on Redis db 14, the local Stripe server) under locust's customer API mix for LOAD_TIME
# seconds; prints throughput, p50/p99 and errors per endpoint and exits 1 above 1% errors. Needs the local
# PostgreSQL and Redis.
LOAD_TIME ?= 60
LOAD_USERS ?= 20

load: $(STAMP)
	$(BIN)/python -m bench.load --run-time $(LOAD_TIME) --users $(LOAD_USERS)

# The fault run (bench/faults): under that load, PostgreSQL restarted, Redis stopped and started, a Celery worker
# killed during a Stripe push, Stripe answering 500s and timeouts for FAULT_WINDOW seconds; a table of checks, exit 1
# on a failed one. Restarts the machine's PostgreSQL and Redis (root): run it where nobody else depends on them.
FAULT_WINDOW ?= 60

faults: $(STAMP)
	$(BIN)/python -m bench.faults --window $(FAULT_WINDOW)
