"""`make jobs ARGS=...`, the README's way to run `python -m jobs` beside `make run`: a notice (exit status 1,
such as failed jobs on the shelf) is not reported as make's error; a wrong command line still is."""

import os
import subprocess
import sys

from ..jobs.helpers import PROJECT, WAIT
from ..jobs.test_cli import shelved


def make_jobs(database_url: str, args: str) -> subprocess.CompletedProcess:
    """Runs `make jobs ARGS=args` on `database_url`, with the Python of this test run, and returns it finished."""
    env = {name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    # PY: this run's Python; --old-file: its packages are installed already, as the stamp would say.
    command = ["make", "jobs", f"ARGS={args}", f"PY={sys.executable}", "--old-file=.venv/.installed-run"]
    return subprocess.run(
        command,
        cwd=PROJECT,
        env={**env, "DATABASE_URL": database_url, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def test_failed_jobs_on_the_shelf_are_listed_without_make_s_error(database_url, db):
    job = shelved(db)

    ran = make_jobs(database_url, "failed --full")

    assert (ran.returncode, ran.stderr) == (0, "")
    assert f"{job}" in ran.stdout and "doomed" in ran.stdout


def test_a_wrong_command_line_still_fails_make(database_url, db):
    ran = make_jobs(database_url, "failed --limit x")

    assert ran.returncode != 0
    assert "Error 2" in ran.stderr
