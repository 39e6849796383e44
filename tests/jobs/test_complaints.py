"""A worker that cannot work says why: the SQLSTATE and the server's message, once, not once a poll."""

import re

import psycopg
import pytest

from jobs.runtime import refusals
from tests.jobs.helpers import PRIVATE, WAIT, granted, scalar, start_worker, stopped, wait_for, worker_log

REFUSED = "the database refused a statement of the worker"  # or of one of the worker's chores
MENDED = "the database accepts the worker's statements again"
REFUSALS_AWAITED = 5  # claims ended after the break that the test waits for, before it mends the database


@pytest.mark.parametrize(
    "broken, refusal",
    [
        ("REVOKE UPDATE ON jobs FROM jobs_app", "42501 permission denied for table jobs"),
        ("ALTER TABLE jobs DROP COLUMN cancelled_at", '42703 column "cancelled_at" does not exist'),
    ],
    ids=["privileges", "column"],
)
def test_a_worker_that_cannot_claim_exits_3_with_the_server_s_message(db, private_url, app_role, broken, refusal):
    granted(db, "SELECT, INSERT, UPDATE, DELETE", PRIVATE)
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute(broken)
    worker = start_worker(app_role(PRIVATE), "mail")
    assert worker.wait(timeout=WAIT) == 3
    assert stopped(worker) == f"jobs: the worker cannot work: {refusal}\n"


def claims_ended(db, seen: set, since) -> int:
    """Adds the moment the worker's work connection last ended a claim after `since` (pg_stat_activity) to `seen`."""
    rows = db.execute(
        "SELECT state_change FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'jobs worker'"
        " AND state = 'idle' AND query LIKE '%%SKIP LOCKED%%' AND state_change > %s",
        [since],
    )
    seen.update(row[0] for row in rows)
    return len(seen)


@pytest.mark.parametrize(
    "broken, mended, refusal",
    [
        (
            "REVOKE UPDATE ON jobs FROM jobs_app",
            "GRANT UPDATE ON jobs TO jobs_app",
            "42501 permission denied for table jobs",
        ),
        (
            "ALTER TABLE jobs DROP COLUMN cancelled_at",
            "ALTER TABLE jobs ADD COLUMN cancelled_at bigint",
            '42703 column "cancelled_at" does not exist',
        ),
    ],
    ids=["privileges", "column"],
)
def test_a_refusal_is_logged_once_at_error_then_counted(db, private_url, app_role, broken, mended, refusal):
    granted(db, "SELECT, INSERT, UPDATE, DELETE", PRIVATE)
    worker = start_worker(app_role(PRIVATE), "mail")
    try:
        wait_for(
            lambda: (
                scalar(
                    db,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name = 'jobs worker'",
                )
                == 3
            ),
            "the worker's three connections",
        )
        with psycopg.connect(private_url, autocommit=True) as owner:
            owner.execute(broken)
            broken_at = owner.execute("SELECT clock_timestamp()").fetchone()
            wait_for(lambda: REFUSED in worker_log(worker), "the refusal to be logged")
            # Claims ended before the break do not count; of those after it, one may have begun
            # before it and one may be the refusal logged: REFUSALS_AWAITED leaves three more.
            refused: set = set()
            wait_for(lambda: claims_ended(db, refused, broken_at[0]) >= REFUSALS_AWAITED, "three more refused claims")
            owner.execute(mended)
        wait_for(lambda: MENDED in worker_log(worker), "the worker to say it works again")
    finally:
        output = stopped(worker)
    assert worker.returncode == 0, output
    refusals = [line for line in output.splitlines() if REFUSED in line]
    assert len(refusals) == 1, output
    assert re.search(rf"{REFUSED}('s [a-z]+)?: {re.escape(refusal)}; trying again in", refusals[0]), refusals
    assert " ERROR " in refusals[0]  # the level, as the command line's log format shows it
    seen = re.search(rf"{MENDED}, after: {re.escape(refusal)} \(seen (\d+) times since\)", output)
    assert seen and int(seen.group(1)) >= 3, output


@pytest.mark.parametrize(
    "error, lost",
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
        (psycopg.errors.InsufficientPrivilege("permission denied for table jobs"), False),
        (psycopg.errors.UndefinedColumn('column "key" does not exist'), False),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
    ],
)
def test_a_lost_connection_is_told_apart_from_a_refusal(error, lost):
    assert refusals.lost(error) is lost


def test_a_worker_that_cannot_reach_the_database_exits_3():
    worker = start_worker("postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=5", "mail")
    assert worker.wait(timeout=WAIT) == 3
    assert stopped(worker).startswith("jobs: the worker cannot start: connection failed")


@pytest.mark.parametrize("table", ["job_workers", "job_paused_queues"])
def test_a_worker_that_cannot_record_itself_or_read_the_pauses_exits_3(db, private_url, app_role, table):
    """Without its row a worker cannot say it is alive; without the pauses it cannot honour one."""
    granted(db, "SELECT, INSERT, UPDATE, DELETE", PRIVATE)
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute(f"REVOKE ALL ON {table} FROM jobs_app")
    worker = start_worker(app_role(PRIVATE), "mail")
    assert worker.wait(timeout=WAIT) == 3
    assert stopped(worker) == f"jobs: the worker cannot work: 42501 permission denied for table {table}\n"
