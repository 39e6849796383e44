"""A work thread holds no claimed job it cannot start now: the jobs claimed behind a slow one are given back.

Most tests first let a worker's claims grow (bursts of quick jobs: a thread's claims
double while they are quick), then put a slow job at the front of a claim, and show
that the jobs claimed after it run elsewhere, or are seen as waiting, while it runs.
"""

import logging
import threading

import jobs
from jobs.runtime import maintenance, running, supervisor, work_thread
from jobs.store import claims, flows
from tests.jobs.helpers import scalar, wait_for

BURSTS = (1, 2, 4, 8, 16, 32)  # jobs queued at once, one burst after another, so each thread's claims grow


def grown(db, worker) -> None:
    """Works bursts of quick jobs through `worker`, so that its threads' next claims take many jobs."""
    for size in BURSTS:
        with db.transaction():
            for _ in range(size):
                jobs.later(db, "default", "work", {})
        assert worker.wait_until_empty(30)


class Runs:
    """A performer `work` that notes each job it starts and holds a job with {"slow": true} until let go."""

    def __init__(self):
        self.started: dict[int, str] = {}
        self.let_go = threading.Event()
        self.slow_began = threading.Event()

    def work(self, conn, args):
        self.started[jobs.current_job().id] = threading.current_thread().name
        if args.get("slow"):
            self.slow_began.set()
            self.let_go.wait(30)


def test_jobs_claimed_behind_a_slow_one_are_started_by_the_other_threads_while_it_runs(db, connect):
    runs = Runs()
    worker = jobs.worker(connect, "default", {"work": runs.work}, threads=4)
    try:
        grown(db, worker)
        with db.transaction():  # a burst of 40, the second of which hangs
            ids = [jobs.later(db, "default", "work", {"slow": n == 1}) for n in range(40)]
        wait_for(lambda: all(job in runs.started for job in ids), "every job of the burst to start", timeout=15)
        wait_for(lambda: scalar(db, "SELECT count(*) FROM jobs") == 1, "all but the slow one to settle", timeout=15)
        assert scalar(db, "SELECT count(*) FROM jobs WHERE claim IS NOT NULL") == 1, "the slow one still runs"
    finally:
        runs.let_go.set()
        worker.stop()
        worker.join(10)


def members_waiting(db, batch) -> int:
    return scalar(db, "SELECT count(*) FROM jobs WHERE batch = %s AND claim IS NULL AND flow IS NULL", (batch,))


def test_cancel_batch_skips_the_members_claimed_behind_the_one_that_runs(db, connect):
    runs = Runs()
    performers = {"work": runs.work, "done": lambda conn, args: runs.started.setdefault(jobs.current_job().id, "done")}
    worker = jobs.worker(connect, "default", performers, threads=1)
    try:
        grown(db, worker)
        runs.started.clear()
        batch = jobs.batch(db, "default", [("work", {"slow": n == 0}) for n in range(30)], always=("done", {}))
        assert runs.slow_began.wait(30)
        wait_for(
            lambda: members_waiting(db, batch) == 29, "the members behind the first to be waiting again", timeout=10
        )
        [queue] = jobs.status(db)
        assert (queue["in_work"], queue["due"]) == (1, 29), "the dashboard sees them waiting, not held"
        assert jobs.cancel_batch(db, batch) == 29
        runs.let_go.set()
        wait_for(lambda: jobs.batch_status(db, batch)["finished"], "the batch to finish")
        assert worker.wait_until_empty(30)
    finally:
        runs.let_go.set()
        worker.stop()
        worker.join(10)
    assert sorted(runs.started.values()).count("done") == 1 and len(runs.started) == 2, "the first member, and always"


def running_in_front(db, worker, runs: Runs) -> None:
    """Grows `worker`'s claims, then has its one thread claim ten jobs and start the first, a slow one."""
    grown(db, worker)
    runs.started.clear()
    with db.transaction():
        for n in range(10):
            jobs.later(db, "default", "work", {"slow": n == 0})
    assert runs.slow_began.wait(30)


def test_a_stop_gives_back_at_once_the_jobs_claimed_behind_the_one_that_runs(db, connect, monkeypatch):
    monkeypatch.setattr(supervisor, "BATCH_TIME", 60.0)  # only the stop gives them back here
    runs = Runs()
    worker = jobs.worker(connect, "default", {"work": runs.work}, threads=1)
    try:
        running_in_front(db, worker, runs)
        worker.stop()
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM jobs WHERE claim IS NULL AND attempts = 0") == 9,
            "the nine claimed behind the slow job to be due again, their attempt not counted",
            timeout=10,
        )
        assert len(runs.started) == 1
    finally:
        runs.let_go.set()
        worker.stop()
        assert worker.join(10)
    assert scalar(db, "SELECT count(*) FROM jobs") == 9


def test_the_jobs_a_stop_gives_back_are_due_again_once_the_worker_has_joined_however_soon_its_last_job_returns(
    db, connect, monkeypatch
):
    """The thread gives back what it holds unstarted as it ends; the keeper's last look settles it, not a later one.

    The keeper looks once at the start and then not for a minute here: whatever the stop gives
    back is settled by its look at the worker's end or not at all (before it, 9 of 9 were left
    held by a worker that said it had stopped).
    """
    monkeypatch.setattr(supervisor, "BATCH_TIME", 60.0)  # only the stop gives them back
    monkeypatch.setattr(maintenance, "WATCH_INTERVAL", 60.0)
    runs = Runs()
    worker = jobs.worker(connect, "default", {"work": runs.work}, threads=1)
    try:
        running_in_front(db, worker, runs)
        worker.stop()
        runs.let_go.set()  # the slow job returns at once: its thread ends with the other nine in hand
        assert worker.join(10)
    finally:
        runs.let_go.set()
        worker.stop()
        worker.join(10)
    assert len(runs.started) == 1
    assert scalar(db, "SELECT count(*) FROM jobs WHERE claim IS NOT NULL") == 0, "none left held by a stopped worker"
    assert scalar(db, "SELECT count(*) FROM jobs WHERE claim IS NULL AND attempts = 0") == 9


def test_a_job_settled_while_the_keeper_compares_the_rows_it_holds_is_neither_warned_of_nor_counted_as_given_back(
    db, connect, monkeypatch, caplog
):
    """The keeper reads the rows the database says the worker holds, then asks the Holdings which no thread holds.

    A job settled between the two (the read is slow beside a held snapshot) is in neither: it
    is no stray, and its give-back, fenced by its claim, touches nothing. Before, each such job
    was logged as held with no thread working it and counted as given back.
    """
    runs = Runs()
    worker = jobs.worker(connect, "default", {"work": runs.work}, threads=1, lease=1.0)
    held_by, looks_after = claims.held_by, []

    def held_by_slowly(conn, worker_id):
        rows = held_by(conn, worker_id)
        if looks_after:
            looks_after.append(rows)
        elif rows and runs.slow_began.is_set():  # the slow job, read as held: it ends before the comparison
            runs.let_go.set()
            wait_for(lambda: not worker.batches_held(), "its thread to settle it and let go of its hand")
            looks_after.append(rows)
        return rows

    monkeypatch.setattr(claims, "held_by", held_by_slowly)
    caplog.set_level(logging.WARNING, logger="jobs")
    try:
        jobs.later(db, "default", "work", {"slow": True})
        wait_for(lambda: len(looks_after) >= 2, "the keeper's next comparison, after the one that read it", timeout=10)
        assert scalar(db, "SELECT count(*) FROM jobs") == 0, "the job succeeded and was settled once"
        assert worker.counts.given_back == 0
        assert "no thread working them" not in caplog.text
    finally:
        runs.let_go.set()
        worker.stop()
        worker.join(10)


def test_a_timeout_never_runs_again_the_jobs_that_ran_before_it_in_its_claim(db, connect):
    """Letters sent before a job that hangs in the same claim are settled, not given back with it and sent twice."""
    sent, hang = [], threading.Event()

    def mail(conn, args):
        sent.append(jobs.current_job().id)  # an SMTP exchange: nothing on the database

    @jobs.policy(attempts=1)
    def api(conn, args):
        if args.get("hang"):
            hang.wait(30)  # an HTTP call with no timeout of its own

    worker = jobs.worker(connect, "default", {"mail": mail, "api": api}, threads=1, timeout=1.0)
    try:
        with db.transaction():  # both names quick a few times; the thread's claims grow
            for _ in range(4):
                jobs.later(db, "default", "api", {})
                jobs.later(db, "default", "mail", {})
        assert worker.wait_until_empty(30)
        sent.clear()
        with db.transaction():
            letters = [jobs.later(db, "default", "mail", {}) for _ in range(3)]
            jobs.later(db, "default", "api", {"hang": True})
        wait_for(lambda: jobs.failed(db), "the hanging job to time out onto the shelf")
        assert worker.wait_until_empty(30)
    finally:
        hang.set()
        worker.stop()
        worker.join(10)
    assert sorted(sent) == letters, "each letter sent once"


def test_members_of_a_batch_cancelled_while_in_a_workers_hand_are_skipped_when_given_back(db):
    batch = jobs.batch(db, "default", [("member", {})] * 3, always=("always", {}))
    first, *rest = claims.claimed(db, "default", limit=3)
    assert jobs.cancel_batch(db, batch) == 0, "all three are claimed"
    flows.given_back(db, rest)  # the thread that claimed them starts none but the first
    status = jobs.batch_status(db, batch)
    assert (status["cancelled"], status["pending"]) == (2, 1)
    assert running.performed(db, [first], {"member": lambda conn, args: None}) == ["ran member"]
    assert jobs.batch_status(db, batch)["finished"]
    assert [job["name"] for job in jobs.listed(db)] == ["always"]


def test_a_thread_gives_back_what_it_claimed_after_a_performer_that_ran_longer_than_its_patience(db):
    def slow(conn, args):
        threading.Event().wait(0.05)  # 50 ms, longer than the patience of 10 ms

    jobs.later(db, "default", "slow", {})
    later_ones = [jobs.later(db, "default", "quick", {}) for _ in range(3)]
    held = claims.claimed(db, "default", limit=4)
    lines = running.performed(db, held, {"slow": slow, "quick": lambda conn, args: None}, patience=0.01)
    assert lines == ["ran slow"]
    assert [job.id for job in claims.claimed(db, "default", limit=4)] == later_ones, "due again, in their order"


def test_a_drain_ends_only_once_the_jobs_the_keeper_gives_back_are_run(db, connect, monkeypatch):
    runs = Runs()
    worker = jobs.worker(connect, "default", {"work": runs.work}, threads=1)
    found_nothing = threading.Event()
    claimed, released = claims.claimed, flows.released

    def claimed_noting(*args, **kwargs):
        got = claimed(*args, **kwargs)
        if not got and runs.let_go.is_set():
            found_nothing.set()
        return got

    def given_back_late(conn, held, *args, **kwargs):
        if held and not runs.let_go.is_set():  # the keeper's give-back of the jobs behind the slow one
            worker.stop(drain=True)
            runs.let_go.set()  # the slow job ends; its thread finds its hand empty and claims again,
            found_nothing.wait(5)  # while these jobs are on their way back to the queue
        return released(conn, held, *args, **kwargs)

    try:
        grown(db, worker)
        monkeypatch.setattr(claims, "claimed", claimed_noting)
        monkeypatch.setattr(flows, "released", given_back_late)
        with db.transaction():  # a burst of 10 claimed at once, the first of which hangs
            ids = [jobs.later(db, "default", "work", {"slow": n == 0}) for n in range(10)]
        assert worker.join(30), "the drain ended"
        assert found_nothing.is_set(), "the thread claimed while the jobs were on their way back"
        assert scalar(db, "SELECT count(*) FROM jobs") == 0, "the drain left due jobs behind"
        assert all(job in runs.started for job in ids)
    finally:
        runs.let_go.set()
        worker.stop()
        worker.join(10)


def test_a_thread_whose_whole_claim_was_handed_on_before_it_ran_claims_again(db, connect, monkeypatch):
    """The supervisor hands on the jobs of a claim whose thread has not started them within BATCH_TIME (a
    starved machine): the thread then holds none of them, and its next claim still takes one or more."""
    real, handed = work_thread.WorkThread._claimed, []

    def claimed_then_handed_on(self, db, queue):
        taken = real(self, db, queue)
        if taken and not handed:  # the first claim's jobs go back before the thread starts them
            handed.extend(self.parts.holdings.handed_on(self.hand))
        return taken

    monkeypatch.setattr(work_thread.WorkThread, "_claimed", claimed_then_handed_on)
    ran = []
    worker = jobs.worker(connect, "default", {"work": lambda conn, args: ran.append(args["n"])}, threads=1)
    try:
        jobs.later(db, "default", "work", {"n": 0})
        wait_for(lambda: handed, "the first claim to be handed on")
        jobs.later(db, "default", "work", {"n": 1})
        wait_for(lambda: sorted(ran) == [0, 1], "both jobs to run on the one thread", timeout=15)
    finally:
        worker.stop()
        worker.join(10)
