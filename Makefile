# Flakeboard: `make run` serves the demo board, `make test` runs the whole suite, and
# `make test-fast` its fast lane. All create .venv and install requirements.txt first.
# `make client` assembles client/flakeboard_ci.py, the CI client the board serves, from its
# modules in client/src/flakeboard_ci/ (client/build.py); install builds it, it is not committed.
# Django 6 needs Python 3.12+.

VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
BENCH_SCALE ?= 1

# The newest of python3.13, python3.12 and python3 that is at least 3.12 (and runs),
# then pyenv's installed versions. Override with PYTHON=/path/to/python3.12.
PYTHON ?= $(shell for p in python3.13 python3.12 python3 \
	$$(ls -d $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3 2>/dev/null); do \
	if $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then echo $$p; break; fi; done)

.PHONY: install run test test-fast lint client bench clean

$(VENV)/.installed: requirements.txt
	@if [ -z "$(PYTHON)" ]; then \
		echo "Flakeboard needs Python 3.12 or newer, and none was found (tried python3.13, python3.12, python3)."; \
		echo "Install one, or name it: make $(MAKECMDGOALS) PYTHON=/path/to/python3.12"; exit 1; fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

install: $(VENV)/.installed client/flakeboard_ci.py

# The served client, assembled from its modules (not committed: built here, on install).
client/flakeboard_ci.py: client/build.py client/build_checks.py $(wildcard client/src/flakeboard_ci/*.py) \
		flakeboard/rules/signatures.py flakeboard/rules/failure_labels.py flakeboard/rules/gate_plan.py
	@$(or $(PYTHON),python3) client/build.py

# `make run` serves the demo as a deployed board does: DEBUG off (so a missing page is the
# board's own 404, not Django's debug page), the secret key generated into .secret_key, the
# static files collected, gunicorn on the loopback. Plain HTTP there, so no HTTPS redirect and
# no secure-only cookies; only errors are logged, so the banner stays in view.
# `make run DEBUG=true` serves with Django's debug pages and reloader instead.
RUN_ENV := DEBUG=$(or $(DEBUG),false) SECRET_KEY_FILE=.secret_key SECURE_SSL_REDIRECT=false \
	SECURE_COOKIES=false SECURE_HSTS_SECONDS=0 LOG_LEVEL=$(or $(LOG_LEVEL),ERROR)

.secret_key:
	@umask 077 && $(or $(PYTHON),python3) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

run: install .secret_key
	@$(RUN_ENV) $(PY) manage.py migrate --noinput -v 0
	@$(RUN_ENV) $(PY) manage.py collectstatic --noinput -v 0
	@$(RUN_ENV) $(PY) manage.py demo -v 0
	@echo
	@echo "  Flakeboard is at http://127.0.0.1:$(PORT)/suites/demo/"
	@echo "  Sign in as lead, owner or viewer (admin for /admin/), password flakeboard-demo."
	@echo "  Ctrl-C stops it."
	@echo
ifeq ($(DEBUG),true)
	@$(RUN_ENV) $(PY) manage.py runserver 127.0.0.1:$(PORT)
else
	@$(RUN_ENV) $(PY) -m gunicorn -c python:flakeboard.gunicorn flakeboard.wsgi --bind 127.0.0.1:$(PORT) --workers 2 --log-level warning
endif

test: install
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) manage.py makemigrations --check --dry-run
	$(CACHED) $(PY) -m pytest $(PYTEST_WORKERS)

# The tests run in random order (pytest-randomly: the header names the seed, and
# `pytest --randomly-seed=N` repeats it) over one worker per core
# (pytest-xdist; PYTEST_WORKERS= runs them in one process). Each worker starts with an
# even share, and one that runs out takes half of what another has left (worksteal), so
# both end together. Each test's clock stands still (tests/clock.py);
# FLAKEBOARD_TEST_CLOCK=23:59:50 starts the run just before midnight UTC.
PYTEST_WORKERS ?= -n auto --dist worksteal

# The test runs keep what Python compiles, and the asserts pytest rewrites, in __pycache__
# (git ignores it) whatever PYTHONDONTWRITEBYTECODE says: the workers of a run share the
# compiling (tests/compile_share.py), and the next run starts from it.
CACHED := PYTHONDONTWRITEBYTECODE=

# The fast lane, budgeted at 60 s on 2 cores: the suite without the slow (real processes,
# over 2 s), browser, fuzz and wide tests (pyproject.toml's markers: a wide test is one more
# case of a kind the lane already asks), and every hypothesis property on a few examples
# (tests/properties.py). It ends with its five slowest tests, so one that creeps past 2 s is
# named (docs/development.md). `make test` is the whole run. The plugins of the fuzzing
# (schemathesis), of async tests (anyio) and of the browser (playwright) stay unloaded: no
# test here uses them, and each worker would import them. On SQLite each worker makes its
# test database's tables from the models, not by migrating (tests/conftest.py).
test-fast: install
	$(CACHED) HYPOTHESIS_PROFILE=fast $(PY) -m pytest $(PYTEST_WORKERS) \
		-m "not slow and not browser and not fuzz and not wide" --nomigrations \
		-p no:schemathesis -p no:anyio -p no:playwright --durations=5

lint: install
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports --no-cache

# The served client is one file, standard library only, for Python 3.8+: build.py needs no
# .venv, only a Python 3.8 or newer.
client:
	$(or $(PYTHON),python3) client/build.py

# Benchmarks (bench/): prints the table, writes bench/results.json and docs/benchmarks.md.
# SQLite always; PostgreSQL too when DATABASE_URL names a server. BENCH_SCALE=0.01 is a smoke run.
# B2's load comes from wrk (Debian's package, installed here when it can be); without it a
# full run does not report B2, since Python threads would measure themselves.
bench: install
	@command -v wrk >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk \
		>/dev/null 2>&1 || echo "make bench: could not install wrk (apt-get install -y wrk): B2 is not reported."
	$(PY) -m bench --scale $(BENCH_SCALE)

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .hypothesis test-artifacts
