"""Leases: a worker that beats keeps a long job its own, and a settlement after a lost lease is refused."""

import logging
import threading
import time

import psycopg

import jobs
from jobs.runtime import running
from jobs.store import claims
from tests.jobs.helpers import scalar, wait_for
from tests.jobs.performers import RUNS


def test_a_beating_worker_keeps_a_job_longer_than_its_lease_from_being_claimed_again(db, connect):
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    release = threading.Event()
    began = []

    def long_job(conn, args):
        began.append(jobs.current_job().attempt)
        release.wait(10)
        conn.execute("INSERT INTO runs VALUES (%s, 0, %s)", (jobs.current_job().id, jobs.current_job().attempt))

    workers = [jobs.worker(connect, "default", {"long": long_job}, lease=0.5) for _ in range(2)]
    try:
        job = jobs.later(db, "default", "long", {})
        wait_for(lambda: began, "the job to start")
        # three leases pass while the job runs; the heartbeat beats the worker's row, never the job's
        holder = scalar(db, "SELECT worker FROM jobs WHERE id = %s", (job,))
        beat = scalar(db, "SELECT beat_at FROM job_workers WHERE id = %s", (holder,))
        wait_for(
            lambda: scalar(db, "SELECT beat_at FROM job_workers WHERE id = %s", (holder,)) > beat + 1500,
            "the heartbeat to beat on past three leases",
        )
        assert scalar(db, "SELECT run_at FROM jobs WHERE id = %s", (job,)) == claims.HELD
        release.set()
        wait_for(lambda: jobs.listed(db) == [], "the job to settle")
    finally:
        release.set()
        for worker in workers:
            worker.stop()
            worker.join(10)
    assert began == [1]
    assert db.execute("SELECT job, attempt FROM runs").fetchall() == [(job, 1)]


def test_settlement_after_the_claim_moved_on_is_refused_and_rolled_back(db, connect, caplog):
    db.execute("CREATE TABLE IF NOT EXISTS performer_writes (n int)")
    db.execute("TRUNCATE performer_writes")

    def taken_over(conn, args):
        conn.execute("INSERT INTO performer_writes VALUES (1)")
        # another worker claims the row, as it would after this worker's lease ran out
        with connect() as other:
            other.execute(
                "UPDATE jobs SET claim = 42, worker = 42, attempts = attempts + 1 WHERE id = %s",
                (jobs.current_job().id,),
            )

    job = jobs.later(db, "default", "taken_over", {})
    with connect() as conn, caplog.at_level(logging.WARNING, logger="jobs"):
        conn.autocommit = True
        assert jobs.worked(conn, "default", {"taken_over": taken_over}) == "lease lost taken_over"
    assert "lease lost" in caplog.text
    assert scalar(db, "SELECT count(*) FROM performer_writes") == 0, "the performer's writes rolled back"
    assert db.execute("SELECT id, claim, attempts FROM jobs").fetchall() == [(job, 42, 2)], (
        "the other claim is untouched"
    )


def test_a_batch_that_wrote_nothing_settles_what_is_still_its_own_and_leaves_the_rest(db, connect, caplog):
    """A batch whose performers never touched the connection deletes its rows in one statement of its own."""

    def taken_over(conn, args):
        with connect() as other:  # another worker claims this row, as it would after this worker's lease ran out
            other.execute(
                "UPDATE jobs SET claim = 42, worker = 42, attempts = attempts + 1 WHERE id = %s",
                (jobs.current_job().id,),
            )

    first, second, third = (jobs.later(db, "default", name, {}) for name in ("quiet", "taken_over", "quiet"))
    performers = {"quiet": lambda conn, args: None, "taken_over": taken_over}
    with connect() as conn, caplog.at_level(logging.WARNING, logger="jobs"):
        claimed = claims.claimed(conn, "default", limit=3)
        counts = jobs.Counts()
        lines = running.performed(conn, claimed, performers, counts=counts)
    assert lines == ["ran quiet", "lease lost taken_over", "ran quiet"]
    assert (counts.processed, counts.lease_lost) == (2, 1)
    assert f"another worker holds job {second}" in caplog.text
    assert db.execute("SELECT id, claim, attempts FROM jobs").fetchall() == [(second, 42, 2)], (
        f"{first} and {third} are settled, not run again; the other claim is untouched"
    )


def test_failure_recorded_after_the_claim_moved_on_is_refused(db, connect):
    def fails_after_takeover(conn, args):
        with connect() as other:
            other.execute("UPDATE jobs SET claim = 42, worker = 42 WHERE id = %s", (jobs.current_job().id,))
        raise RuntimeError("too late")

    jobs.later(db, "default", "fails", {})
    with connect() as conn:
        conn.autocommit = True
        assert jobs.worked(conn, "default", {"fails": fails_after_takeover}) == "lease lost fails"
    (row,) = jobs.listed(db)
    assert row["failure"] == "" and row["reasons"] == []


def test_a_healthy_run_logs_no_lease_lost(db, connect, caplog):
    """The heartbeat beats every 0.1 s while thousands of jobs settle under it: none is lost, none said to be."""
    jobs.later_many(db, "default", "quick", [{"n": n} for n in range(3000)])
    ran = []
    with caplog.at_level(logging.WARNING, logger="jobs"):
        worker = jobs.worker(
            connect, "default", {"quick": lambda conn, args: ran.append(args["n"])}, threads=4, lease=0.2
        )
        try:
            assert worker.wait_until_empty(60)
        finally:
            worker.stop()
            worker.join(10)
    assert sorted(ran) == list(range(3000)) and worker.counts.lease_lost == 0
    assert "lease lost" not in caplog.text


def test_heartbeat_raises_no_false_lease_lost_for_jobs_of_its_batch_already_settled(db, connect, caplog):
    def works(conn, args):
        time.sleep(args["ms"] / 1000)

    with caplog.at_level(logging.INFO, logger="jobs"):
        worker = jobs.worker(connect, "default", {"works": works}, lease=0.4)  # a heartbeat every 0.2 s
        try:
            jobs.later(db, "default", "works", {"ms": 1})  # a quick batch of one: the next claim takes two
            assert worker.wait_until_empty(10)
            # One claim takes both: the first job settles (it ran past COMMIT_AFTER), and
            # its row is gone while the second runs through several heartbeats.
            jobs.later_many(db, "default", "works", [{"ms": 10}, {"ms": 1000}])
            assert worker.wait_until_empty(10)
        finally:
            worker.stop()
            assert worker.join(10)
    assert caplog.text.count("(works on default) ran works") == 3, caplog.text
    assert "is held by another worker" not in caplog.text, caplog.text


def test_a_claim_that_waited_longer_than_its_lease_still_gets_a_live_lease(db, connect):
    lease = 1.0
    alive = []

    def looks_at_its_lease(conn, args):
        alive.append(
            scalar(
                conn,
                "SELECT run_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM jobs WHERE id = %s",
                (jobs.current_job().id,),
            )
        )

    job = jobs.later(db, "default", "looks", {})
    with connect() as locker:
        with locker.transaction():
            locker.execute("LOCK TABLE jobs IN EXCLUSIVE MODE")  # claims (UPDATEs) wait, as behind a slow lock
            worker = jobs.worker(connect, "default", {"looks": looks_at_its_lease}, lease=lease)
            try:
                wait_for(
                    lambda: scalar(
                        db,
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock'"
                        " AND query LIKE '%%attempts = attempts + 1%%' AND clock_timestamp() - query_start"
                        " > make_interval(secs => %s)",
                        (lease * 1.5,),
                    ),
                    "a claim to wait past its lease",
                )
            except BaseException:
                worker.stop()
                raise
        try:
            wait_for(lambda: alive, "the job to run")
        finally:
            worker.stop()
            assert worker.join(10)
    assert alive == [True], f"job {job} ran under a lease that had run out before its claim returned"


def test_a_claim_whose_answer_was_lost_with_its_connection_is_given_back_and_runs_once(db, connect, monkeypatch):
    """The claim committed, then the connection died before its answer came (a crash of the server, a
    failover): the rows are held for a worker that still beats, so no lease would ever free them. The
    thread gives back what its unheard claim took once it is connected again, and the job runs once."""
    real_claimed, lost = claims.claimed, []

    def claimed_and_answer_lost(db, queue, **options):
        jobs_claimed = real_claimed(db, queue, **options)
        if jobs_claimed and not lost:
            lost.extend(job.id for job in jobs_claimed)
            db.close()  # the claim has committed; its answer never reaches the thread
            raise psycopg.OperationalError("the connection was lost before the claim's answer came")
        return jobs_claimed

    monkeypatch.setattr(claims, "claimed", claimed_and_answer_lost)
    ran = []
    worker = jobs.Worker(connect, "default", {"noted": lambda conn, args: ran.append(args["n"])}, threads=1, poll=0.2)
    job = jobs.later(db, "default", "noted", {"n": 1})
    worker.start()
    try:
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", (job,)) == 0,
            "the job whose claim went unheard to run",
            timeout=15,
        )
    finally:
        worker.stop()
        worker.join(10)
    assert lost == [job]
    assert ran == [1]
