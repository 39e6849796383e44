# The two commands of the README, and the benchmark.
#   make run    the guestbook, with its mail worker beside it
#   make test   every test: unit, integration (real PostgreSQL, real SMTP) and browser specs
#   make bench  the job queue's benchmark (not part of the tests)
# Each makes or updates the virtual environment in .venv first.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench

run: $(STAMP)
	$(PY) -m guestbook serve --development

test: $(STAMP)
	@[ -n "$$CHROMIUM_PATH" ] || [ -x /usr/bin/chromium ] || $(PY) -m playwright install chromium
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m tests.benchmarks $(BENCH_ARGS)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)
