"""The worker in this process: waking on a notification, stopping, and surviving lost connections."""

import selectors
import statistics
import threading
import time

import pytest

import jobs
from jobs.runtime.maintenance import Chore, Listener
from jobs.runtime.refusals import Refusals
from jobs.runtime.work_thread import Doorbell, Gate
from jobs.store import claims
from tests.jobs.helpers import scalar, wait_for


def test_idle_worker_starts_a_job_well_within_the_poll_interval(db, started):
    began = []
    woken = threading.Event()

    def note(_, args):
        began.append(time.perf_counter())
        woken.set()

    started(["default"], {"note": note})
    delays = []
    for _ in range(20):
        woken.clear()
        with db.transaction():
            jobs.later(db, "default", "note", {})
        committed = time.perf_counter()
        assert woken.wait(5), "the job never started"
        delays.append(began[-1] - committed)
    assert statistics.median(delays) < 0.2, f"median wake-up {statistics.median(delays) * 1000:.1f} ms"


def test_stopping_lets_the_job_in_hand_finish_and_claims_nothing_new(db, started):
    inside, release = threading.Event(), threading.Event()
    done = []

    def slow(_, args):
        inside.set()
        release.wait(10)
        done.append(args["n"])

    worker = started(["default"], {"slow": slow})
    for n in range(3):
        jobs.later(db, "default", "slow", {"n": n})
    assert inside.wait(10)
    worker.stop()
    release.set()
    assert worker.join(10)
    assert done == [0]
    assert [j["args"]["n"] for j in jobs.listed(db)] == [1, 2]
    assert all(j["attempts"] == 0 for j in jobs.listed(db)), "unstarted jobs keep their attempts"


def test_stop_with_drain_finishes_what_is_due_first(db, started):
    done = []
    for n in range(50):
        jobs.later(db, "default", "note", {"n": n})
    worker = started(["default"], {"note": lambda _, args: done.append(args["n"])})
    worker.stop(drain=True)
    assert worker.join(10)
    assert sorted(done) == list(range(50))
    assert jobs.listed(db) == []


def test_jobs_run_in_the_order_they_were_queued(db, started):
    done = []
    for n in range(30):
        jobs.later(db, "default", "note", {"n": n})
    worker = started(["default"], {"note": lambda _, args: done.append(args["n"])})
    assert worker.wait_until_empty(10)
    assert done == list(range(30))


def test_lower_priority_number_runs_first_among_due_jobs(db):
    for n, priority in enumerate([5, 0, 9, 0, -1]):
        jobs.later(db, "default", "note", {"n": n}, priority=priority)
    done = []
    while jobs.worked(db, "default", {"note": lambda _, args: done.append(args["n"])}):
        pass
    assert done == [4, 1, 3, 0, 2]


def worker_backends(db):
    """The backends of worker connections other than the test's own."""
    query = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'jobs tests' AND pid <> pg_backend_pid()"
    )
    return [row[0] for row in db.execute(query)]


def terminate(db, pids):
    for pid in pids:
        db.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_worker_survives_its_connections_being_cut_while_idle(db, started):
    done = []
    worker = started(["default"], {"note": lambda _, args: done.append(args["n"])})
    wait_for(lambda: len(worker_backends(db)) == 3, "the worker's three connections")
    terminate(db, worker_backends(db))
    for n in range(10):
        jobs.later(db, "default", "note", {"n": n})
    wait_for(lambda: len(done) == 10, "ten jobs to run after the reconnection")
    assert worker.wait_until_empty(10)
    assert sorted(done) == list(range(10))


def test_worker_survives_its_connection_being_cut_mid_job_and_loses_nothing(db, started):
    inside, release = threading.Event(), threading.Event()
    attempts = []

    def cut_off(conn, args):
        attempts.append(jobs.current_job().attempt)
        if len(attempts) == 1:
            inside.set()
            release.wait(10)
            conn.execute("SELECT 1")  # the connection is gone by now: this raises
        conn.execute("CREATE TABLE IF NOT EXISTS cut_off (n int)")
        conn.execute("INSERT INTO cut_off VALUES (%s)", (args["n"],))

    db.execute("DROP TABLE IF EXISTS cut_off")
    worker = started(["default"], {"cut_off": cut_off}, lease=1.0)
    jobs.later(db, "default", "cut_off", {"n": 7})
    assert inside.wait(10)
    terminate(db, worker_backends(db))
    release.set()
    wait_for(
        lambda: attempts[-1:] == [2] and jobs.listed(db) == [],
        "the job to come back after its lease and run",
        timeout=15,
    )
    assert scalar(db, "SELECT array_agg(n) FROM cut_off") == [7]
    assert worker.counts.failed == 0 and worker.counts.rescheduled == 0, "a lost connection is not a failed job"


def test_a_broken_failure_policy_does_not_end_the_work_loop(db, started):
    def broken_backoff(attempt):
        raise ZeroDivisionError("the policy itself is wrong")

    @jobs.policy(backoff=broken_backoff)
    def fails(_, args):
        raise RuntimeError("the job failed")

    done = []
    started(["default"], {"fails": fails, "note": lambda _, args: done.append(args["n"])}, lease=1.0)
    jobs.later(db, "default", "fails", {})
    jobs.later(db, "default", "note", {"n": 1})
    wait_for(lambda: done == [1], "the next job to run after the broken policy")
    jobs.later(db, "default", "note", {"n": 2})
    wait_for(lambda: done == [1, 2], "the worker to go on working")


def test_draining_with_many_threads_runs_every_due_job_and_joins_promptly(db, started):
    done = []
    jobs.later_many(db, "default", "note", [{"n": n} for n in range(2000)])
    worker = started(["default"], {"note": lambda _, args: done.append(args["n"])}, threads=4, poll=30.0)
    worker.stop(drain=True)
    assert worker.join(10), "the worker ended within 10 s, well before its 30 s poll"
    assert sorted(done) == list(range(2000))
    assert jobs.listed(db) == []


def test_a_worker_whose_connection_is_cut_gives_its_jobs_back_at_once(db, connect):
    began, backends, release = [], [], threading.Event()

    def held(conn, args):
        began.append(jobs.current_job().attempt)
        if len(began) == 1:
            backends.append(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
            release.wait(10)

    worker = jobs.worker(connect, "default", {"held": held})  # a lease of 30 s
    try:
        jobs.later(db, "default", "held", {})
        wait_for(lambda: backends, "the job to start")
        db.execute("SELECT pg_terminate_backend(%s)", (backends[0],))  # the work thread's connection
        cut = time.monotonic()
        release.set()
        wait_for(lambda: len(began) == 2, "the job to run again", timeout=10)
        assert time.monotonic() - cut < 5, "it ran again long before its 30 s lease ran out"
        assert worker.wait_until_empty(10)
    finally:
        release.set()
        worker.stop()
        worker.join(10)
    assert began == [1, 2], "its first attempt counted, as after a crash"


def test_a_notification_wakes_one_thread_not_every_thread(db, connect, monkeypatch):
    looks = []
    real = claims.claimed

    def counted(*args, **kwargs):
        looks.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(claims, "claimed", counted)
    worker = jobs.worker(connect, "default", {"quick": lambda conn, args: None}, threads=8, poll=60)
    try:
        wait_for(lambda: len(looks) >= 8, "each thread's first look")
        wait_for(lambda: worker.wait_until_empty(1), "the threads to be idle")
        before = len(looks)
        for n in range(20):
            jobs.later(db, "default", "quick", {"n": n})
            wait_for(lambda: worker.wait_until_empty(1), f"job {n} to run")
        per_job = (len(looks) - before) / 20
    finally:
        worker.stop()
        worker.join(10)
    assert per_job <= 3, f"{per_job:.1f} claims per job: idle threads woke for nothing"


def test_beside_hands_on_start_the_running_worker_before_it_serves(db, connect):
    handed = []

    def serve():
        (worker,) = handed
        jobs.later(db, "default", "note", {})
        assert worker.wait_until_empty(10), "the worker handed to on_start works the queue while serving"
        return worker.counts.processed

    assert jobs.beside(connect, "default", {"note": lambda *_: None}, serve, on_start=handed.append) == 1
    assert handed[0].join(10), "and it stops once serve returns"


def test_a_claimed_row_is_read_into_a_job_by_column_name_whatever_their_order(db):
    """claims.job_row matches columns to Job's fields by name; a column missing is named in the error."""
    row = (
        "SELECT 'q' AS queue, 7 AS id, 'n' AS name, '{}'::jsonb AS args, 0 AS priority, 1 AS due_at, 1 AS attempt, "
        "5 AS max_attempts, NULL AS key, NULL AS batch, NULL AS flow, 9 AS claim, 2 AS claimed_at"
    )
    with db.cursor(row_factory=claims.job_row) as cursor:
        [job] = cursor.execute(row).fetchall()
        assert (job.id, job.queue, job.name, job.claim, job.max_attempts) == (7, "q", "n", 9, 5)
        with pytest.raises(LookupError, match="no column for claim"):
            cursor.execute(row.replace(", 9 AS claim", "")).fetchall()


def test_a_job_the_listeners_own_chores_queue_rings_for_a_thread_in_the_same_step(db, connect):
    """A schedule's job is queued on the listener's connection, whose notification psycopg has
    already read by the time the chores end: select would not wake for it until the next timer."""
    doorbell = Doorbell(1)
    chores = [Chore("queueing", 60, lambda db: jobs.later(db, "default", "noop", {}))]
    listener = Listener(
        connect, Gate(["default"], doorbell), chores, Refusals(), listen=True, stopping=threading.Event()
    )
    with connect() as own, selectors.DefaultSelector() as listener._selector:
        own.autocommit = True
        listener._selector.register(listener._wakeup_r, selectors.EVENT_READ)
        listener._listening(own)
        assert doorbell.wait(0), "a thread is woken when the listener starts listening"
        listener._step(own)
        assert doorbell.wait(0), "the job its chores queued woke a thread"
    listener.closed()
