"""A part that waits costs only its own jobs: no stall of one part makes a live worker lose, or re-run, another's.

Three stalls, each a wait the worker does not control: a slow on_error hook of a job that
timed out, a worker process frozen (SIGSTOP) with its settlement's row locked, and a
chore of the listener waiting on an app's lock. In each, the jobs that run beside the
stall run once, and a worker that beats is never taken for gone. And one wait it does
control: a stop signal never waits on the lock its worker's main thread holds.
"""

import collections
import os
import signal
import subprocess
import threading
import time

import psycopg

import jobs
from jobs.cli.main import APPLICATION_NAME
from tests.jobs.helpers import (
    WAIT,
    exited,
    held_by_live_workers,
    scalar,
    start_command,
    start_worker,
    wait_for,
)
from tests.jobs.performers import EFFECTS

LEASE = 2.0  # seconds: a worker silent for 1.5 s is taken for gone; reapers look every half second
FAULTS = {"PYTHONFAULTHANDLER": "1"}  # a worker process's environment: SIGABRT prints each thread's stack


class Runs:
    """The runs of each performer of a test: how many began, and their (start, end) on time.monotonic()."""

    def __init__(self):
        self.began = collections.Counter()
        self.spans = collections.defaultdict(list)
        self._lock = threading.Lock()

    def ran(self, name: str, seconds: float) -> None:
        """Notes a run of `name` that takes `seconds`, away from the database."""
        with self._lock:
            self.began[name] += 1
        start = time.monotonic()
        time.sleep(seconds)
        with self._lock:
            self.spans[name].append((start, time.monotonic()))


def ended_or_aborted(process) -> str:
    """Waits for a worker process told to stop, and returns what it printed; one still running after WAIT is aborted.

    Started with FAULTS, an aborted process prints where each of its threads waited. A
    worker with nothing slow in hand ends within a second or two on a busy machine: WAIT
    (30 s) is ten times that and more, and no more than GRACE, so a stop that waits on
    anything, a job kept to the end of its grace included, fails.
    """
    try:
        process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
    return exited(process)


def stopped_now(*workers) -> None:
    for worker in workers:
        if worker is not None:
            worker.stop()
    for worker in workers:
        if worker is not None:
            worker.join(15)


def test_a_slow_on_error_hook_of_a_timed_out_job_never_gets_its_live_worker_taken_for_gone(db, connect):
    """The hook takes twice the lease; the worker's other job, an API call of 3 s, must run once."""
    runs, hooked = Runs(), threading.Event()

    def hook(job, error):
        runs.ran("hook", 2 * LEASE)  # posts to an alerting service that hangs
        hooked.set()

    @jobs.policy(attempts=1, timeout=0.3, on_error=hook)
    def flaky(conn, args):
        time.sleep(1.0)

    performers = {"flaky": flaky, "long": lambda conn, args: runs.ran("long", 3.0)}
    first = jobs.worker(connect, "default", performers, threads=2, lease=LEASE)
    second = None
    ending = "SELECT ending FROM job_workers WHERE id = %s"
    endings = set()
    try:
        jobs.later(db, "default", "long", {})
        jobs.later(db, "default", "flaky", {})
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs WHERE attempts = 1") == 2, "both jobs to start")
        second = jobs.worker(connect, "default", performers, threads=1, lease=LEASE)
        wait_for(
            lambda: endings.add(scalar(db, ending, (first.id,))) or (hooked.is_set() and runs.spans["long"]),
            "the hook and the long job to end",
            timeout=4 * LEASE,
        )
        assert second.wait_until_empty(10)
    finally:
        stopped_now(first, second)
    assert endings == {None}, f"the live worker was taken for gone ({endings}) while its hook ran"
    assert runs.began["long"] == 1, f"the long job ran {runs.began['long']} times, side by side: {runs.spans['long']}"


FROZEN_HOLDING = f"""
    SELECT a.pid FROM pg_stat_activity a
    WHERE a.application_name = '{APPLICATION_NAME}' AND a.state = 'idle in transaction' AND a.backend_xid IS NOT NULL
        AND EXISTS (SELECT 1 FROM jobs WHERE jobs.xmax = a.backend_xid)"""  # its open transaction locked a job's row
STOPS = 3000  # random stops of the worker process before the test gives up catching it mid-settlement
FREEZE = 4 * LEASE  # seconds the worker stays frozen at the most once caught
DELIVERY = 4.0  # seconds the other worker's job takes, away from the database


def test_a_worker_frozen_mid_settlement_costs_another_worker_neither_its_reaper_nor_its_jobs(db, database_url):
    """A real worker process SIGSTOPped with a settlement's row lock held (a VM paused, a debugger)."""
    db.execute(EFFECTS)
    db.execute("TRUNCATE effects")
    jobs.later_many(db, "frozen", "effect", [{"n": n} for n in range(20_000)])
    frozen = start_worker(database_url, "frozen", "--lease", str(LEASE), "--threads", "1", env=FAULTS)
    other = None
    runs = Runs()
    try:
        wait_for(lambda: scalar(db, "SELECT count(*) FROM effects") >= 200, "the worker process to work")
        caught = None
        for stop in range(STOPS):
            os.kill(frozen.pid, signal.SIGSTOP)
            time.sleep(0.002)  # the stop reaches every thread of the process
            caught = db.execute(FROZEN_HOLDING).fetchone()
            if caught:
                break
            os.kill(frozen.pid, signal.SIGCONT)
            time.sleep(0.001 + (stop % 7) * 0.0005)  # stops land at varied moments of the settlements
        assert caught, f"the worker process was never caught mid-settlement in {STOPS} stops"
        frozen_at = time.monotonic()
        frozen_id = scalar(db, "SELECT id FROM job_workers WHERE pid = %s AND ended_at IS NULL", (frozen.pid,))
        other = jobs.worker(
            lambda: psycopg.connect(database_url),
            "other",
            {"deliver": lambda conn, args: runs.ran("deliver", DELIVERY)},
            lease=LEASE,
            silent_after=LEASE,
        )
        jobs.later(db, "other", "deliver", {})
        gone = "SELECT ended_at IS NOT NULL FROM job_workers WHERE id = %s"
        wait_for(lambda: runs.spans["deliver"], "the other worker's delivery to end", timeout=FREEZE)
        assert time.monotonic() - frozen_at < FREEZE, "the worker process stayed frozen throughout"
        assert scalar(db, gone, (frozen_id,)), (
            "the frozen worker was never taken for gone while its row lock stood"
            f" (its jobs still held: {len(held_by_live_workers(db))}; the other's delivery ran {runs.began['deliver']}"
            " times)"
        )
        assert runs.began["deliver"] == 1, f"the other worker's delivery ran {runs.began['deliver']} times"
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
        try:
            frozen.terminate()
            said = ended_or_aborted(frozen)
            assert "the worker stopped" in said, f"the worker process did not end once told to stop:\n{said}"
        finally:
            stopped_now(other)  # even when the process did not end, so that the test fails for that alone


WAIT_BOUND = 1.5  # seconds: the worker's silent_after, which a chore's wait on the app's lock outlasts
APP_LOCK = 3.0  # seconds the app holds the lock the chore waits on
JOB_TIME = 4.0  # seconds each running job takes


def test_a_chore_waiting_on_a_lock_does_not_cut_the_connections_of_running_jobs(db, connect, database_url):
    """An app holds job_paused_queues locked past silent_after while two jobs run, one with an open transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS rebuilt (what text)")
    db.execute("TRUNCATE rebuilt")
    runs = Runs()

    def deliver(conn, args):  # an SMTP exchange: never touches the connection
        runs.ran("deliver", JOB_TIME)

    def rebuild(conn, args):  # a report: writes, computes, writes
        conn.execute("INSERT INTO rebuilt VALUES ('started')")
        runs.ran("rebuild", JOB_TIME)
        conn.execute("INSERT INTO rebuilt VALUES ('done')")

    worker = jobs.worker(
        connect, "default", {"deliver": deliver, "rebuild": rebuild}, threads=2, silent_after=WAIT_BOUND
    )
    try:
        jobs.later(db, "default", "deliver", {})
        jobs.later(db, "default", "rebuild", {})
        wait_for(lambda: len(runs.began) == 2, "both jobs to run")
        with psycopg.connect(database_url) as app, app.transaction():
            app.execute("LOCK TABLE job_paused_queues IN ACCESS EXCLUSIVE MODE")
            time.sleep(APP_LOCK)  # the fault: longer than silent_after, shorter than the jobs
        assert worker.wait_until_empty(30)
    finally:
        stopped_now(worker)
    assert dict(runs.began) == {"deliver": 1, "rebuild": 1}, f"runs after one chore waited on a lock: {runs.began}"
    assert sorted(db.execute("SELECT what FROM rebuilt").fetchall()) == [("done",), ("started",)]


def test_a_stop_signal_landing_while_the_main_thread_holds_the_workers_lock_stops_the_worker(database_url):
    """Its handler runs while join holds the worker's lock (signalled_in_lock.py), and must not wait on that lock."""
    process = start_command(
        database_url,
        "work",
        "signalled",
        "--performers",
        "tests.jobs.signalled_in_lock:performers",
        env=FAULTS,
    )
    said = ended_or_aborted(process)  # it sends itself the signal
    assert "the worker stopped" in said, f"the worker process did not end after its stop signal:\n{said}"
