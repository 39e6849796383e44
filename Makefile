# The two commands of the README, the contributors' checks, and the benchmark.
#   make run    the guestbook, with its mail worker beside it
#   make test   every test: unit, integration (real PostgreSQL, real SMTP) and browser specs
#   make check  the linter, the formatter (checking only: it changes no file) and the type checker,
#               as pyproject.toml configures them; CI runs it before the tests
#   make bench  the job queue's benchmark (not part of the tests)
#   make jobs ARGS=status   `python -m jobs ARGS` on `make run`'s embedded database (DATABASE_URL if set);
#               its exit status 1, a notice (`failed` found jobs on the shelf, `retry` changed nothing),
#               is passed as 0 so that make does not report it as an error: scripts that read the
#               notice run `python -m jobs` itself. 2 and 3 (a wrong command line, no database) fail.
# Each makes or updates the virtual environment in .venv first, with the extra it needs:
# run and jobs install `.[embedded]` (the app and the embedded PostgreSQL, no test tool), test,
# check and bench `.[test]` (the test tools, the embedded PostgreSQL among them). One stamp per
# extra (.venv/.installed-run, .venv/.installed-test) says which is installed, for this pyproject.toml.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# python -m jobs's EXIT_NOTICE: a notice, not a failure, for `make jobs`.
JOBS_NOTICE := 1

# The address `make run` prints for its embedded database in .pgdata/ (pgserver's socket is there).
RUN_DATABASE := postgresql://postgres:@/postgres?host=$(CURDIR)/.pgdata

.PHONY: run test check bench jobs

run: $(VENV)/.installed-run
	$(PY) -m guestbook serve --development

test: $(VENV)/.installed-test
	@[ -n "$$CHROMIUM_PATH" ] || [ -x /usr/bin/chromium ] || $(PY) -m playwright install chromium
	$(PY) -m pytest $(PYTEST_ARGS)

check: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(VENV)/.installed-test
	$(PY) -m tests.benchmarks $(BENCH_ARGS)

jobs: $(VENV)/.installed-run
	DATABASE_URL="$${DATABASE_URL:-$(RUN_DATABASE)}" $(PY) -m jobs $(ARGS) || { status=$$?; [ $$status -eq $(JOBS_NOTICE) ] || exit $$status; }

# The extra each stamp installs.
EXTRA_run := embedded
EXTRA_test := test

# Into .venv's own Python, whatever PY says: a command given another PY never installs into its environment.
$(VENV)/.installed-%: pyproject.toml
	[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -e '.[$(EXTRA_$*)]'
	touch $@
