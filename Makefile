# The two commands of the README, the contributors' checks, and the benchmark.
#   make run    the guestbook, with its mail worker beside it
#   make test   every test: unit, integration (real PostgreSQL, real SMTP) and browser specs
#   make check  the linter, the formatter (checking only: it changes no file) and the type checker,
#               as pyproject.toml configures them; CI runs it before the tests
#   make bench  the job queue's benchmark (not part of the tests)
#   make jobs ARGS=status   `python -m jobs ARGS` on `make run`'s embedded database (DATABASE_URL if set)
# Each makes or updates the virtual environment in .venv first.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The address `make run` prints for its embedded database in .pgdata/ (pgserver's socket is there).
RUN_DATABASE := postgresql://postgres:@/postgres?host=$(CURDIR)/.pgdata

.PHONY: run test check bench jobs

run: $(STAMP)
	$(PY) -m guestbook serve --development

test: $(STAMP)
	@[ -n "$$CHROMIUM_PATH" ] || [ -x /usr/bin/chromium ] || $(PY) -m playwright install chromium
	$(PY) -m pytest $(PYTEST_ARGS)

check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m tests.benchmarks $(BENCH_ARGS)

jobs: $(STAMP)
	DATABASE_URL="$${DATABASE_URL:-$(RUN_DATABASE)}" $(PY) -m jobs $(ARGS)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)
