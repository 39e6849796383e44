"""Each job that writes has a transaction of its own: its writes stand or fall with that job alone."""

import contextlib
import tempfile
import threading
import time

import pytest

import jobs
from jobs.runtime import running
from jobs.runtime.running import performed
from jobs.store import claims
from tests.jobs.helpers import scalar, wait_for


def writes(db, args):
    db.execute("INSERT INTO performer_writes VALUES (%s)", (args["n"],))
    if args.get("fail"):
        raise RuntimeError(f"job {args['n']} failed after writing")


def swallows(db, args):
    try:
        db.execute("SELECT 1 / 0")
    except Exception:
        pass  # the error is swallowed, but the transaction stays failed


def untouched(db, args):
    pass


def claimed_all(db):
    return claims.claimed(db, "default", jobs.now_ms(), limit=100)


def effects(db):
    return [row[0] for row in db.execute("SELECT n FROM performer_writes ORDER BY n")]


def prepare_effects(db):
    db.execute("CREATE TABLE IF NOT EXISTS performer_writes (n int)")
    db.execute("TRUNCATE performer_writes")


def test_a_failing_job_rolls_back_its_own_writes_and_keeps_its_neighbours(db):
    prepare_effects(db)
    for n, fail in [(1, False), (2, True), (3, False), (4, True), (5, False)]:
        jobs.later(db, "default", "writes", {"n": n, "fail": fail})
    lines = performed(db, claimed_all(db), {"writes": writes})
    assert lines == [
        "ran writes",
        "failed writes on attempt 1: job 2 failed after writing",
        "ran writes",
        "failed writes on attempt 1: job 4 failed after writing",
        "ran writes",
    ]
    assert effects(db) == [1, 3, 5]
    assert [(j["args"]["n"], j["failure"]) for j in jobs.listed(db)] == [
        (2, "job 2 failed after writing"),
        (4, "job 4 failed after writing"),
    ]


def test_a_job_that_swallows_a_statement_error_fails_without_harming_the_others(db):
    prepare_effects(db)
    jobs.later(db, "default", "writes", {"n": 1})
    jobs.later(db, "default", "swallows", {})
    jobs.later(db, "default", "writes", {"n": 3})
    lines = performed(db, claimed_all(db), {"writes": writes, "swallows": swallows})
    assert lines[0] == "ran writes" and lines[2] == "ran writes"
    assert lines[1].startswith("failed swallows on attempt 1: a statement of the job failed")
    assert effects(db) == [1, 3]


def statements_sent(db, run, statement: bytes) -> int:
    """How many times `run()` sends `statement` on `db`, read from libpq's own trace (F: sent by the client)."""
    with tempfile.TemporaryFile() as trace:
        db.pgconn.trace(trace.fileno())
        try:
            run()
        finally:
            db.pgconn.untrace()
        trace.seek(0)
        return sum(line.count(statement) for line in trace.read().splitlines() if b"\tF\t" in line)


def test_only_jobs_that_touch_the_database_get_a_transaction(db, monkeypatch):
    monkeypatch.setattr(running, "COMMIT_AFTER", 60.0)  # the quiet ones settle together, however busy the machine
    prepare_effects(db)
    for n in range(3):
        jobs.later(db, "default", "untouched", {})
        jobs.later(db, "default", "writes", {"n": n})
    claimed = claimed_all(db)
    sent = statements_sent(db, lambda: performed(db, claimed, {"untouched": untouched, "writes": writes}), b"BEGIN")
    assert sent == 3, "one transaction for each job that writes, none for those that do not"
    assert effects(db) == [0, 1, 2] and jobs.listed(db) == []


def commits(db, args):
    db.execute("INSERT INTO performer_writes VALUES (%s)", (args["n"],))
    db.commit()


def test_a_performer_may_not_commit_the_workers_connection(db):
    prepare_effects(db)
    jobs.later(db, "default", "commits", {"n": 1})
    jobs.later(db, "default", "writes", {"n": 2})
    lines = performed(db, claimed_all(db), {"commits": commits, "writes": writes})
    assert lines[0].startswith("failed commits on attempt 1: a performer may not commit the worker's connection")
    assert lines[1] == "ran writes"
    assert effects(db) == [2]


def test_a_quick_jobs_writes_commit_before_a_slow_neighbour_runs(db, connect):
    """300 no-op jobs grow the batch; a 10 ms job, a job that counts, then one of 3 s."""
    db.execute("CREATE TABLE IF NOT EXISTS counters (id int PRIMARY KEY, n int NOT NULL)")
    db.execute("TRUNCATE counters")
    db.execute("INSERT INTO counters VALUES (1, 0)")
    slow_began, slow_may_end = threading.Event(), threading.Event()

    def slow(conn, args):
        slow_began.set()
        slow_may_end.wait(3)

    performers = {
        "noop": lambda conn, args: None,
        "ten_ms": lambda conn, args: time.sleep(0.01),
        "count": lambda conn, args: conn.execute("UPDATE counters SET n = n + 1 WHERE id = 1"),
        "slow": slow,
    }
    with db.transaction():
        jobs.later_many(db, "default", "noop", [{}] * 300)
        for name in ("ten_ms", "count", "slow"):
            jobs.later(db, "default", name, {})
    worker = jobs.worker(connect, "default", performers)
    try:
        assert slow_began.wait(30), "the slow job never started"
        wait_for(
            lambda: scalar(db, "SELECT n FROM counters WHERE id = 1") == 1,
            "the count to be visible while the slow job runs",
            timeout=0.5,
            every=0.01,
        )
        with connect() as other:
            other.execute("SET lock_timeout = '1s'")
            other.execute("UPDATE counters SET n = n + 10 WHERE id = 1")  # not blocked by the slow job's group
            other.commit()
        assert scalar(db, "SELECT count(*) FROM jobs WHERE name = 'slow'") == 1, (
            "all this happened while the slow job ran"
        )
    finally:
        slow_may_end.set()
        worker.stop()
        worker.join(10)
    assert scalar(db, "SELECT n FROM counters WHERE id = 1") == 11


def test_a_quick_jobs_writes_commit_while_a_name_that_was_quick_before_runs_slow(db, connect):
    """A name quick three times, then slow: the job before it in the same claim has committed all the same."""
    db.execute("CREATE TABLE IF NOT EXISTS counters (id int PRIMARY KEY, n int NOT NULL)")
    db.execute("TRUNCATE counters")
    db.execute("INSERT INTO counters VALUES (1, 0)")
    counted, slow_may_end = threading.Event(), threading.Event()

    def count(conn, args):
        conn.execute("UPDATE counters SET n = n + 1 WHERE id = 1")
        counted.set()

    def notify(conn, args):
        if args.get("slow"):
            slow_may_end.wait(30)  # a webhook whose server hangs, this once

    worker = jobs.worker(connect, "default", {"count": count, "notify": notify})
    try:
        with db.transaction():  # claims of 1, then 2: the next claim takes up to 4
            for _ in range(3):
                jobs.later(db, "default", "notify", {})
        assert worker.wait_until_empty(30)
        with db.transaction():
            jobs.later(db, "default", "count", {})
            jobs.later(db, "default", "notify", {"slow": True})
        assert counted.wait(30)
        with connect() as app:  # the app's own request, on the row the quick job wrote
            app.execute("SET lock_timeout = '2s'")
            app.execute("UPDATE counters SET n = n + 10 WHERE id = 1")
            app.commit()
        assert scalar(db, "SELECT count(*) FROM jobs WHERE name = 'notify'") == 1, "the slow job still runs"
    finally:
        slow_may_end.set()
        worker.stop()
        worker.join(10)
    assert scalar(db, "SELECT n FROM counters WHERE id = 1") == 11


def ends_its_transaction(conn, args):
    conn.execute("INSERT INTO performer_writes VALUES (%s)", (args["n"],))
    with conn.cursor() if args.get("cursor") else contextlib.nullcontext(conn) as target:
        target.execute(args["statement"])


@pytest.mark.parametrize(
    "statement, cursor",
    [
        ("COMMIT", False),
        ("commit work", False),
        ("/* done */ END", False),
        ("SELECT 1; COMMIT", False),
        ("ROLLBACK", False),
        ("abort", False),
        ("PREPARE TRANSACTION 'x'", False),
        ("COMMIT AND CHAIN", False),
        ("COMMIT", True),
    ],
)
def test_a_performer_may_not_end_the_jobs_transaction_with_a_statement(db, statement, cursor):
    """A COMMIT sent as SQL would commit the job's writes before its row is settled: a crash then runs it twice."""
    prepare_effects(db)
    jobs.later(db, "default", "ends", {"n": 1, "statement": statement, "cursor": cursor})
    [line] = performed(db, claimed_all(db), {"ends": ends_its_transaction})
    assert line.startswith("failed ends on attempt 1: a performer may not end the worker's transaction")
    assert effects(db) == [], "its write rolled back with its transaction"
    [row] = jobs.listed(db)
    assert row["attempts"] == 1 and row["reasons"] != []


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 'commit'",
        'SELECT 1 AS "end"',
        "SELECT CASE WHEN true THEN 1 END",
        "SELECT $$; COMMIT$$",
        "SELECT 1 -- ; COMMIT",
    ],
)
def test_statements_that_only_mention_commit_run_as_usual(db, statement):
    prepare_effects(db)
    jobs.later(db, "default", "ends", {"n": 1, "statement": statement})
    assert performed(db, claimed_all(db), {"ends": ends_its_transaction}) == ["ran ends"]
    assert effects(db) == [1]


def test_a_performer_may_roll_back_to_a_savepoint_of_its_own(db):
    def partly(conn, args):
        conn.execute("INSERT INTO performer_writes VALUES (1)")
        try:
            with conn.transaction():
                conn.execute("INSERT INTO performer_writes VALUES (2)")
                raise ValueError("undo the second")
        except ValueError:
            pass
        conn.execute("SAVEPOINT mine; INSERT INTO performer_writes VALUES (3); ROLLBACK TO SAVEPOINT mine")

    prepare_effects(db)
    jobs.later(db, "default", "partly", {})
    assert performed(db, claimed_all(db), {"partly": partly}) == ["ran partly"]
    assert effects(db) == [1]


def test_a_job_that_commits_through_the_raw_connection_fails_for_good_rather_than_write_twice(db):
    def commits_raw(conn, args):
        conn.execute("INSERT INTO performer_writes VALUES (1)")
        conn.connection.commit()  # the object itself: nothing can refuse this

    prepare_effects(db)
    jobs.later(db, "default", "commits_raw", {})
    [line] = performed(db, claimed_all(db), {"commits_raw": commits_raw})
    assert line.startswith("failed commits_raw on attempt 1: the job ended the worker's transaction itself")
    [shelved] = jobs.failed(db)
    assert shelved["attempts"] == 1, "not tried again: its write is committed already"
    assert effects(db) == [1]
