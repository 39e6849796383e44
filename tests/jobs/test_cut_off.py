"""A job whose connection the server ends mid-attempt: only that attempt counts as crashed, and it counts as one.

The performers here end their own server session (as a restart, a failover or
pg_terminate_backend would) and then touch the connection. The jobs claimed with them
that had finished, or had not started, keep their fate; and a policy's attempts are all
run, however many of them end that way.
"""

import collections
import time

import psycopg

import jobs
from tests.jobs.helpers import scalar, wait_for

LEASE = 1.0  # seconds: the worker's lease, so its reaper passes come every quarter second
JOBS = 80  # quiet jobs of one burst, the probe among them: claims grow 1, 2, 4 ... so its claim has neighbours
PROBE = 40  # the job among them that ends its own session, in the claim of 32 that takes jobs 32 to 63


def ended_own_session(conn, side) -> None:
    """Ends the server session of `conn` from `side`, then touches `conn`, which raises."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    side.execute("SELECT pg_terminate_backend(%s, 1000)", (pid,))
    conn.execute("SELECT 1")


def test_a_lost_connection_lapses_only_the_job_that_ran_not_those_done_or_not_started(db, connect, database_url):
    runs = collections.Counter()

    @jobs.policy(attempts=1)
    def mail(conn, args):  # sends a letter: never touches the connection
        runs[jobs.current_job().id] += 1

    def ping(conn, args):  # calls an API: never touches the connection
        runs[jobs.current_job().id] += 1

    def probe(conn, args):
        runs[jobs.current_job().id] += 1
        if runs[jobs.current_job().id] == 1:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            side.execute("SELECT pg_terminate_backend(%s)", (pid,))  # the server ends the session
            time.sleep(0.003)  # the moment the performer takes to touch its connection again
        conn.execute("SELECT 1")

    with psycopg.connect(database_url, autocommit=True) as side:
        with db.transaction():
            names = {}
            for n in range(JOBS):
                name = "probe" if n == PROBE else ("mail" if n % 2 else "ping")
                names[jobs.later(db, "default", name, {"n": n})] = name
        performers = {"mail": mail, "ping": ping, "probe": probe}
        worker = jobs.worker(connect, "default", performers, threads=1, lease=LEASE)
        try:
            assert worker.wait_until_empty(20)
            wait_for(
                lambda: scalar(db, "SELECT count(*) FROM jobs WHERE claim IS NOT NULL") == 0,
                "every claim to be settled, given back or reaped",
                timeout=4 * LEASE,
            )
        finally:
            worker.stop()
            worker.join(10)
    shelf = {job["id"]: (names[job["id"]], runs[job["id"]], job["failure"]) for job in jobs.failed(db, limit=JOBS)}
    assert not shelf, f"jobs shelved after one lost connection (id: name, runs, reason): {shelf}"
    twice = {job: names[job] for job, count in runs.items() if count > 1 and names[job] != "probe"}
    assert not twice, f"jobs that had succeeded ran again: {twice}"
    assert all(runs[job] == 1 for job in names if names[job] != "probe"), "every job but the probe ran once"
    assert scalar(db, "SELECT count(*) FROM jobs") == 0


def test_a_policy_of_eight_attempts_each_ended_by_a_lost_connection_runs_all_eight(db, connect, database_url):
    seen = []  # (attempt, final) of each attempt begun

    with psycopg.connect(database_url, autocommit=True) as side:

        @jobs.policy(attempts=8, backoff=jobs.intervals(*[0] * 7))
        def fragile(conn, args):
            job = jobs.current_job()
            seen.append((job.attempt, job.final))
            ended_own_session(conn, side)

        worker = jobs.worker(connect, "default", {"fragile": fragile}, threads=1, lease=LEASE)
        try:
            job = jobs.later(db, "default", "fragile", {})
            # Seven reconnections, each after a backoff twice the last: 13 s of waiting alone.
            wait_for(lambda: jobs.failed(db), "the job to fail for good", timeout=60)
        finally:
            worker.stop()
            worker.join(10)
    assert [attempt for attempt, _ in seen] == list(range(1, 9)), f"attempts run before the shelf: {seen}"
    assert [final for _, final in seen] == [False] * 7 + [True], "final on the eighth attempt only"
    assert scalar(db, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 8
