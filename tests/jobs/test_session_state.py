"""A job's session state is its own: the next job on the same connection finds it as the worker opened it.

Each test runs a job that leaves something on its session (a SET, a role, a session
advisory lock, a temporary table, a prepared statement), then another job on the same work thread (threads=1), and
shows that the second job does not meet the first one's state.
"""

import psycopg
import pytest
from psycopg import sql

import jobs
from tests.jobs.helpers import scalar, wait_for

LOCK = 250_725  # the session advisory lock a job takes: a number no other test uses
TENANT = "session_state_tenant"  # a role a job takes: a name no other test uses


@pytest.fixture
def tenants(db):
    """A table `session_items` in public and in a tenant's schema, and a table of the jobs' hits; all empty."""
    db.execute("DROP SCHEMA IF EXISTS session_tenant CASCADE; DROP TABLE IF EXISTS session_items, session_hits")
    db.execute(
        "CREATE SCHEMA session_tenant; CREATE TABLE session_tenant.session_items (n int);"
        " CREATE TABLE session_items (n int); CREATE TABLE session_hits (what text)"
    )
    yield db
    db.execute("DROP SCHEMA IF EXISTS session_tenant CASCADE; DROP TABLE IF EXISTS session_items, session_hits")


def settled(db, job) -> bool:
    """Whether the job's attempt is over: its row deleted, or back in the queue with a failure."""
    query = "SELECT count(*) FROM jobs WHERE id = %s AND (claim IS NOT NULL OR failure = '')"
    return scalar(db, query, (job,)) == 0


def one_after_the_other(db, connect, performers, first, second) -> str | None:
    """Runs job `first`, then job `second`, on one work thread; answers the second's failure (None: it succeeded)."""
    worker = jobs.worker(connect, "default", performers, threads=1)
    try:
        before = jobs.later(db, "default", first, {})
        wait_for(lambda: settled(db, before), f"{first} to settle")
        after = jobs.later(db, "default", second, {})
        wait_for(lambda: settled(db, after), f"{second} to settle")
    finally:
        worker.stop()
        worker.join(10)
    row = db.execute("SELECT failure FROM jobs WHERE id = %s", (after,)).fetchone()
    return None if row is None else row[0]


def tune(conn, args):
    conn.execute("SET statement_timeout = '150ms'")  # meant for this job's own query
    conn.execute("INSERT INTO session_hits VALUES ('tune')")


def report(conn, args):
    conn.execute("SELECT pg_sleep(0.3)")
    conn.execute("INSERT INTO session_hits VALUES ('report')")


def test_a_statement_timeout_one_job_sets_does_not_bound_the_next_job(tenants, connect):
    failure = one_after_the_other(tenants, connect, {"tune": tune, "report": report}, "tune", "report")
    assert failure is None, f"report, after tune on the same connection, failed: {failure}"
    assert sorted(tenants.execute("SELECT what FROM session_hits").fetchall()) == [("report",), ("tune",)]


def tenant(conn, args):
    conn.execute("SET search_path TO session_tenant, public")  # as schema-per-tenant apps do
    conn.execute("INSERT INTO session_items VALUES (1)")


def audit(conn, args):
    conn.execute("INSERT INTO session_items VALUES (2)")  # a job for no tenant: public.session_items


def test_a_search_path_one_job_sets_does_not_send_the_next_jobs_writes_elsewhere(tenants, connect):
    assert one_after_the_other(tenants, connect, {"tenant": tenant, "audit": audit}, "tenant", "audit") is None
    assert tenants.execute("SELECT n FROM public.session_items").fetchall() == [(2,)], (
        "audit, a job for no tenant, writes public's table, not the one the job before it chose"
    )
    assert tenants.execute("SELECT n FROM session_tenant.session_items").fetchall() == [(1,)]


@jobs.policy(attempts=1)
def locker(conn, args):
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
    raise RuntimeError("failed before pg_advisory_unlock")


def free(db) -> bool:
    """Whether another session can take the advisory lock LOCK now (it lets it go at once)."""
    if not scalar(db, "SELECT pg_try_advisory_lock(%s)", (LOCK,)):
        return False
    db.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
    return True


def test_a_session_advisory_lock_of_a_failed_job_is_not_kept_by_the_workers_connection(db, connect):
    worker = jobs.worker(connect, "default", {"locker": locker}, threads=1)
    try:
        jobs.later(db, "default", "locker", {})
        wait_for(lambda: jobs.failed(db), "the locker to fail")
        wait_for(lambda: free(db), "the failed job's advisory lock to be let go", timeout=2.0)
    finally:
        worker.stop()
        worker.join(10)


def stage(conn, args):
    conn.execute("CREATE TEMP TABLE staging (n int)")  # ON COMMIT PRESERVE ROWS, the default
    conn.execute("INSERT INTO staging VALUES (1)")


def test_a_temporary_table_one_job_makes_is_gone_for_the_next_job(db, connect):
    failure = one_after_the_other(db, connect, {"stage": stage}, "stage", "stage")
    assert failure is None, f"the second stage job, on the same connection, failed: {failure}"


@pytest.fixture
def tenant_role(tenants):
    """The tenants fixture's connection, and TENANT, a role that may use what the worker's user owns (a member of
    it), as apps with row-level security make."""
    me = scalar(tenants, "SELECT current_user")
    tenants.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(TENANT)))
    tenants.execute(sql.SQL("CREATE ROLE {} NOLOGIN IN ROLE {}").format(sql.Identifier(TENANT), sql.Identifier(me)))
    yield tenants
    tenants.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(TENANT)))


def as_tenant(conn, args):
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(TENANT)))  # for the tenant's rows alone
    conn.execute("INSERT INTO session_hits VALUES (current_user)")


def authorized_as_tenant(conn, args):
    conn.execute(sql.SQL("SET SESSION AUTHORIZATION {}").format(sql.Identifier(TENANT)))
    conn.execute("INSERT INTO session_hits VALUES (current_user)")


def who(conn, args):
    conn.execute("INSERT INTO session_hits VALUES (current_user || ' ' || session_user)")


@pytest.mark.parametrize("first", ["as_tenant", "authorized_as_tenant"])
def test_a_role_one_job_takes_is_not_the_next_jobs_nor_the_workers(tenant_role, connect, first):
    performers = {"as_tenant": as_tenant, "authorized_as_tenant": authorized_as_tenant, "who": who}
    me = scalar(tenant_role, "SELECT current_user")
    assert one_after_the_other(tenant_role, connect, performers, first, "who") is None
    hits = [what for (what,) in tenant_role.execute("SELECT what FROM session_hits").fetchall()]
    assert sorted(hits) == sorted([TENANT, f"{me} {me}"]), "who runs as the worker's own user"


def test_a_role_the_connect_function_sets_is_the_one_each_job_gets_back(tenant_role, database_url):
    def connect():
        conn = psycopg.connect(database_url)
        conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(TENANT)))  # the worker's role, every job's
        conn.commit()
        return conn

    performers = {"as_tenant": as_tenant, "authorized_as_tenant": authorized_as_tenant, "who": who}
    me = scalar(tenant_role, "SELECT current_user")
    assert one_after_the_other(tenant_role, connect, performers, "authorized_as_tenant", "who") is None
    hits = [what for (what,) in tenant_role.execute("SELECT what FROM session_hits").fetchall()]
    assert sorted(hits) == sorted([TENANT, f"{TENANT} {me}"]), "who runs as the role its connect function set"


def lookup(conn, args):
    conn.execute("PREPARE session_lookup AS SELECT 1")  # SQL's own PREPARE: it lasts as long as the session
    for n in range(10):  # past psycopg's prepare_threshold: psycopg prepares it, under a name of its own
        conn.execute("SELECT %s::int", (n,))
    kept = "SELECT count(*) FROM pg_prepared_statements WHERE NOT from_sql"
    conn.execute(f"INSERT INTO session_hits SELECT 'psycopg ' || ({kept})")


def test_a_statement_one_job_prepares_is_gone_for_the_next_and_psycopgs_own_are_kept(tenants, connect):
    failure = one_after_the_other(tenants, connect, {"lookup": lookup}, "lookup", "lookup")
    assert failure is None, f"the second lookup, on the same connection, failed: {failure}"
    hits = [what for (what,) in tenants.execute("SELECT what FROM session_hits").fetchall()]
    assert hits[1] >= hits[0] >= "psycopg 1", "psycopg's statements prepared by the first are kept for the second"
