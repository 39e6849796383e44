"""What the job queue's tests share: worker processes, and waiting on the database.

A worker process a test starts dies with the test run, even a run killed before its
teardown (e2e/tether.py), and starts only once no stray worker is on the database.
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

import psycopg
from psycopg import sql

from e2e.tether import dying_with_this_thread
from jobs.cli.main import APPLICATION_NAME

PROJECT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds a test waits on a condition before it fails
PRIVATE = "jobs_private"  # the schema of a test's own tables (the private_url fixture)
APP_ROLE = "jobs_app"  # the role of an app that may only SELECT, INSERT, UPDATE and DELETE (app_role)
STRAY_WAIT = 5.0  # seconds a stopped worker's connections may take to close before they count as a stray's
STARTED: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()  # the worker processes this test run started
CHECKED: set[str] = set()  # the addresses no_stray_worker has found free of strays in this run


def start_worker(database_url, queue, *options, env=None):
    """Starts `python -m jobs work` on `queue` with the test performers, as its own process; `env` adds to its
    environment."""
    no_stray_worker(database_url)
    process = start_command(
        database_url, "work", queue, "--performers", "tests.jobs.performers:performers", *options, env=env
    )
    STARTED.add(process)
    return process


def no_stray_worker(database_url) -> None:
    """Fails if a worker this run did not start is on the database: it would take the test's jobs.

    Asked at the first start on each address, while none of this run's workers runs, for
    then every worker's connection on the database is a stray's. Once is enough: this
    run's own workers die with it, and later a pooler in front of the database keeps
    the connections of workers that have stopped open for the next client, under
    their name.
    """
    if database_url in CHECKED or any(process.poll() is None for process in STARTED):
        return
    query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
    try:
        db = psycopg.connect(database_url, autocommit=True)
    except psycopg.OperationalError:
        return  # a database nobody reaches holds no stray, and the test means the worker to meet it so
    with db:
        try:
            wait_for(lambda: scalar(db, query, [APPLICATION_NAME]) == 0, "", timeout=STRAY_WAIT)
        except AssertionError:
            raise AssertionError(
                f"a stray {APPLICATION_NAME!r} is on {db.info.dbname} (connections: "
                f"{scalar(db, query, [APPLICATION_NAME])}) and would take this test's jobs: stop it"
                " (pgrep -af 'jobs work') before the tests run"
            ) from None
    CHECKED.add(database_url)


def start_command(database_url, *args, env=None):
    """Starts `python -m jobs ARGS` on `database_url` as its own process; its output goes to `process.log`.

    The output goes to a file, not a pipe: a worker logging thousands of jobs would
    fill a pipe nobody reads yet, and block. `env` adds to its environment.
    """
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(PROJECT), **(env or {})}
    log = tempfile.TemporaryFile(mode="w+")
    command = [sys.executable, "-m", "jobs", *args]
    process = subprocess.Popen(
        command,
        cwd=PROJECT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=dying_with_this_thread(),
    )
    process.log = log
    return process


def wait_for(condition, what: str, timeout: float = WAIT, every: float = 0.02):
    """Returns condition()'s first true answer, or fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = condition()
        if answer:
            return answer
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def stopped(process, timeout: float = WAIT) -> str:
    """Ends a worker process with SIGTERM and returns what it printed."""
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=timeout)
    process.log.seek(0)
    return process.log.read()


def exited(process, timeout: float = WAIT) -> str:
    """Waits for a process already told to stop, and returns what it printed.

    `stopped` would signal it again if it is still at work, and a worker takes a
    second signal as "give everything back at once", ending its grace period.
    """
    process.wait(timeout=timeout)
    process.log.seek(0)
    return process.log.read()


def killed_and_replaced(runs, database_url, queue: str, queued, meanwhile=lambda: None) -> int:
    """Starts a worker on `queue` with a 3 s lease, queues a job (`queued()` answers its id), kills the worker once
    it has claimed it (and `meanwhile()` ran), and starts another, which works until the table is empty; answers
    the job's id."""
    first = start_worker(database_url, queue, "--lease", "3")
    second = None
    try:
        job = queued()
        wait_for(lambda: scalar(runs, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the first claim")
        meanwhile()
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = start_worker(database_url, queue, "--lease", "3")
        wait_for(lambda: scalar(runs, "SELECT count(*) FROM jobs") == 0, "the jobs to come back and end", timeout=20)
    finally:
        stopped(first)
        if second:
            stopped(second)
    return job


def scalar(db, query, params=()):
    """The single value a query answers."""
    return db.execute(query, params).fetchone()[0]


def emptied(db, tables: str, made_by: str):
    """`db`, once the statement `made_by` has made `tables` (a test's own, "a, b") where missing and they are empty."""
    db.execute(made_by)
    db.execute(f"TRUNCATE {tables}")
    return db


def granted(db, privileges: str, schema: str = "public") -> None:
    """Grants APP_ROLE `privileges` (such as "SELECT, UPDATE") on every table of `schema`, and its use."""
    role, where = sql.Identifier(APP_ROLE), sql.Identifier(schema)
    db.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(where, role))
    db.execute(sql.SQL("GRANT {} ON ALL TABLES IN SCHEMA {} TO {}").format(sql.SQL(privileges), where, role))


def worker_log(process) -> str:
    """What a running process of start_command has printed so far.

    Read with pread: the process writes through the same file offset, which a seek would move.
    """
    fd = process.log.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", "replace")


def walk(plan: dict) -> dict:
    """The LockRows node of the claim: the walk over due jobs, under the join that updates what it took."""
    found = lock_rows(plan)
    assert found is not None, f"the claim's plan has no LockRows node: {plan}"
    return found


def lock_rows(plan: dict) -> dict | None:
    """The LockRows node of `plan` or of the plans under it; None when there is none."""
    if plan["Node Type"] == "LockRows":
        return plan
    return next((found for child in plan.get("Plans", []) if (found := lock_rows(child))), None)


HELD_BY_LIVE_WORKERS = """
    SELECT j.id FROM jobs j JOIN job_workers w ON w.id = j.worker
    WHERE j.claim IS NOT NULL AND w.ended_at IS NULL ORDER BY j.id"""


def held_by_live_workers(db) -> list[int]:
    """The ids of the jobs whose row says a claim of a worker that still beats holds them."""
    return [row[0] for row in db.execute(HELD_BY_LIVE_WORKERS)]


def work_threads() -> list[str]:
    """The names of this process's living work threads (jobs-worker-N), however a worker makes them."""
    return sorted(thread.name for thread in threading.enumerate() if thread.name.startswith("jobs-worker-"))


def database_ms(db) -> int:
    """The database's clock, in the milliseconds since the epoch that the jobs' moments are kept in."""
    return scalar(db, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint")


def waited_for_release(db, condition, what: str, timeout: float):
    """wait_for, whose failure also names the jobs then held by a live worker (none should be, unworked, so long)."""
    try:
        return wait_for(condition, what, timeout=timeout)
    except AssertionError as error:
        raise AssertionError(
            f"{error}; jobs held by a live worker now: {held_by_live_workers(db)}; work threads: {work_threads()}"
        ) from None
