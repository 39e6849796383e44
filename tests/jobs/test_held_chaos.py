"""Held rows under chaos: two worker processes frozen, cut off, refused and cancelled at random for a minute.

Writing jobs, chains and batches are queued all along while the test, at random moments,
freezes a worker process (SIGSTOP, then SIGCONT), ends the server session of each of the
workers' connections in turn, queues a job whose first COMMIT the server refuses, and
cancels a batch's jobs as an operator would, while they settle. Throughout, no row is
held by a live worker for longer than BOUND; at the end every job took effect exactly
once (a cancelled one at most once, and it is on the shelf as cancelled), nothing is
left due or held, and both workers still run.
"""

import itertools
import os
import random
import signal
import time

import psycopg
from psycopg import sql

import jobs
from jobs.cli.main import APPLICATION_NAME
from tests.jobs.helpers import HELD_BY_LIVE_WORKERS, held_by_live_workers, scalar, start_worker, stopped, wait_for
from tests.jobs.performers import EFFECTS, REFUSALS

CHAOS = 60.0  # seconds of chaos, as issue 25 asks
LEASE = 2.0  # seconds: the worker processes' lease; a frozen one is taken for gone 1.5 s after its last beat
BOUND = 3 * LEASE  # seconds a row may stay held, under one claim, by a worker that beats
EVERY = 0.1  # seconds between the test's moves
LONGEST_FREEZE = 2.5  # seconds a worker process stays frozen at the most: past its silence, within BOUND
SETTLE = 60.0  # seconds the jobs may take to settle once the chaos ends
QUEUED = 0.3  # the share of the test's moves that queue jobs (34 each): about 6,000 in the minute
HELD_CLAIMS = HELD_BY_LIVE_WORKERS.replace("SELECT j.id FROM", "SELECT j.id, j.claim FROM")


class Held:
    """Watches which rows live workers hold, under which claim, since when; notes those held past BOUND."""

    def __init__(self, db):
        self.db = db
        self.since: dict[tuple, float] = {}
        self.overdue: dict[int, float] = {}  # job id: the longest it was seen held under one claim, in seconds

    def looked(self) -> None:
        now = time.monotonic()
        held = {(job, claim) for job, claim in self.db.execute(HELD_CLAIMS)}
        self.since = {pair: self.since.get(pair, now) for pair in held}
        for (job, _), since in self.since.items():
            if now - since > BOUND:
                self.overdue[job] = max(self.overdue.get(job, 0.0), round(now - since, 1))


class Chaos:
    """The test's moves against two worker processes, and the jobs it queued."""

    def __init__(self, db, workers, seed: int):
        self.db, self.workers, self.random = db, workers, random.Random(seed)
        self.numbers = itertools.count()
        self.queued: set[int] = set()  # the `n` of every job queued
        self.batches: list[int] = []
        self.frozen: dict[int, float] = {}  # pid of a frozen worker: when it is let go (time.monotonic())
        self.cut = 0  # sessions ended so far: the next one ends the next connection in turn
        self.deadlocks = 0  # cancels the server refused as a deadlock (the operator pressed again)
        self.waited = 0  # cancels given up behind a frozen worker's locks (the operator pressed again later)

    def args(self) -> dict:
        n = next(self.numbers)
        self.queued.add(n)
        return {"n": n, "ms": self.random.choice((0, 0, 1, 5))}

    def queue(self) -> None:
        jobs.later_many(self.db, "chaos", "effect", [self.args() for _ in range(10)])
        jobs.chain(self.db, "chaos", [("effect", self.args()) for _ in range(3)])
        self.batches.append(jobs.batch(self.db, "chaos", [("effect", self.args()) for _ in range(20)]))
        if self.random.random() < 0.2:
            jobs.later(self.db, "chaos", "refused_first_time", self.args())

    def thawed(self, every: bool = False) -> None:
        for pid, until in list(self.frozen.items()):
            if every or time.monotonic() >= until:
                os.kill(pid, signal.SIGCONT)
                del self.frozen[pid]

    def move(self) -> None:
        move = self.random.choice(("freeze", "cut", "cancel", "none"))
        if move == "freeze":
            worker = self.random.choice(self.workers)
            if worker.pid not in self.frozen:
                os.kill(worker.pid, signal.SIGSTOP)
                short = self.random.random() < 0.8
                self.frozen[worker.pid] = time.monotonic() + (
                    self.random.uniform(0.005, 0.3) if short else self.random.uniform(1.6, LONGEST_FREEZE)
                )
        elif move == "cut":
            pids = [row[0] for row in self.db.execute(CONNECTIONS, (APPLICATION_NAME,))]
            if pids:
                self.db.execute("SELECT pg_terminate_backend(%s)", (pids[self.cut % len(pids)],))
                self.cut += 1
        elif move == "cancel" and self.batches:
            self.cancelled(self.batches.pop(self.random.randrange(len(self.batches))))

    def cancelled(self, batch: int) -> None:
        """Cancels the jobs of `batch` left in the table, as the dashboard's cancel of the jobs it lists does."""
        ids = [row[0] for row in self.db.execute("SELECT id FROM jobs WHERE batch = %s", (batch,))]
        for _ in range(3):
            try:
                if ids:
                    # A frozen worker may hold a row mid-settlement: waiting on it here would keep it frozen.
                    self.db.execute(sql.SQL("SET lock_timeout = {}").format(CANCEL_LOCK_WAIT_MS))
                    jobs.cancelled(self.db, *ids)
                return
            except psycopg.errors.DeadlockDetected:
                self.deadlocks += 1
            except psycopg.errors.LockNotAvailable:
                self.waited += 1
                self.thawed()
            finally:
                self.db.execute("RESET lock_timeout")


CANCEL_LOCK_WAIT_MS = sql.Literal(1000)  # ms an operator's cancel waits on a row's lock before pressing again
CONNECTIONS = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s ORDER BY pid"
)
LEFT = "SELECT count(*) FROM jobs WHERE NOT (attempts >= max_attempts AND claim IS NULL)"  # not on the shelf


def test_under_a_minute_of_freezes_cuts_refusals_and_cancels_every_job_takes_effect_once(db, database_url):
    db.execute(EFFECTS)
    db.execute(REFUSALS)
    db.execute("TRUNCATE effects, refusal_children")
    workers = [start_worker(database_url, "chaos", "--lease", str(LEASE), "--threads", "2") for _ in range(2)]
    chaos, held = Chaos(db, workers, seed=25), Held(db)
    try:
        wait_for(lambda: scalar(db, "SELECT count(*) FROM job_workers WHERE ended_at IS NULL") == 2, "both workers")
        ends = time.monotonic() + CHAOS
        while time.monotonic() < ends:
            chaos.thawed()
            if chaos.random.random() < QUEUED:
                chaos.queue()
            chaos.move()
            held.looked()
            time.sleep(EVERY)  # the pace of the test's moves, not a wait for an outcome
        chaos.thawed(every=True)
        try:
            wait_for(lambda: held.looked() or scalar(db, LEFT) == 0, "every job to settle", timeout=SETTLE)
        except AssertionError as error:
            raise AssertionError(
                f"{error}: {scalar(db, LEFT)} of {len(chaos.queued)} left, {len(held_by_live_workers(db))} of them"
                f" held by a live worker; held past {BOUND:g} s (id: seconds): {held.overdue}"
            ) from None
        assert all(worker.poll() is None for worker in workers), "both workers still run"
    finally:
        chaos.thawed(every=True)
        for worker in workers:
            stopped(worker)
    assert not held.overdue, f"rows held by a live worker past {BOUND:g} s (id: seconds): {held.overdue}"
    shelf = jobs.failed(db, limit=len(chaos.queued))
    assert {job["failure"] for job in shelf} <= {jobs.CANCELLED}, "only cancelled jobs on the shelf"
    cancelled = {job["args"]["n"] for job in shelf}
    effects = dict(db.execute("SELECT n, runs FROM effects").fetchall())
    twice = {n: runs for n, runs in effects.items() if runs > 1}
    assert not twice, f"jobs that took effect more than once (n: runs): {twice}"
    lost = sorted(n for n in chaos.queued - cancelled if n not in effects)
    assert not lost, f"jobs that never took effect: {lost[:20]} ({len(lost)} in all)"
    assert cancelled and chaos.cut and len(chaos.queued) > 1000, "the chaos happened"
