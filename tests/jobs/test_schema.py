"""Deploying beside a running app: `prepared` on a current schema locks nothing, upgrades wait their turn.

Also the app's own role, which may only SELECT, INSERT, UPDATE and DELETE: it can
start workers and queue jobs once an owner has made the tables.
"""

import time

import psycopg
import pytest

import jobs
from jobs.store import claims, enqueue, schema
from tests.jobs.helpers import WAIT, granted, scalar, start_command, start_worker, stopped, wait_for, worker_log
from tests.jobs.performers import RUNS

QUICK = 1.0  # seconds another session's `later` or claim may take while a process starts beside it


def worker_connections(db) -> int:
    return scalar(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'jobs worker'",
    )


def quick(what: str, run) -> None:
    """Runs `run()`, and fails unless it finished within QUICK seconds."""
    started = time.monotonic()
    try:
        run()
    except psycopg.errors.QueryCanceled:
        raise AssertionError(f"{what} waited longer than {QUICK:g} s") from None
    assert time.monotonic() - started < QUICK, f"{what} took {time.monotonic() - started:.2f} s"


def others_unhindered(connect, until) -> None:
    """Queues and claims in other sessions, each within QUICK seconds, until `until()` is true."""
    with connect() as other:
        other.autocommit = True
        other.execute("SELECT set_config('statement_timeout', %s, false)", (f"{round(QUICK * 1000)}ms",))

        def unhindered():
            quick("another session's later", lambda: jobs.later(other, "elsewhere", "record", {}))
            quick("another session's claim", lambda: claims.claimed(other, "elsewhere", jobs.now_ms()))
            return until()

        wait_for(unhindered, "the starting process")


def test_a_worker_starting_beside_an_open_transaction_holds_up_no_one(db, connect, database_url):
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    app = connect()
    worker = None
    try:
        job = jobs.later(app, "deploy", "record", {})  # the app's transaction stays open
        worker = start_worker(database_url, "deploy")
        others_unhindered(connect, lambda: worker_connections(db) == 3)
        app.commit()
        wait_for(lambda: scalar(db, "SELECT count(*) FROM runs") == 1, "the new worker to work the app's job")
        assert scalar(db, "SELECT job FROM runs") == job
    finally:
        app.close()
        output = stopped(worker) if worker else ""
    assert worker.returncode == 0, output


def test_prepared_on_a_current_schema_locks_nothing_but_its_own_record(connect):
    with connect() as conn:
        with conn.transaction():  # the locks it took are held until this ends
            jobs.prepared(conn)
            locks = conn.execute(
                "SELECT relation::regclass::text, mode FROM pg_locks WHERE pid = pg_backend_pid()"
                " AND locktype = 'relation' AND relation::regclass::text LIKE 'job%%' ORDER BY 1"
            ).fetchall()
    assert locks == [("job_schema", "AccessShareLock"), ("job_schema_pkey", "AccessShareLock")]


def test_an_upgrade_waits_its_turn_without_holding_up_the_app(private_url):
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute("DELETE FROM job_schema WHERE version >= 3")  # as if the indexes' step were new
    app = psycopg.connect(private_url)
    upgrade = None
    waiting = f"step 3 of {schema.VERSION} waits for a lock another transaction holds"
    try:
        jobs.later(app, "deploy", "record", {})  # the app's transaction stays open
        upgrade = start_command(private_url, "prepare")
        others_unhindered(lambda: psycopg.connect(private_url), lambda: worker_log(upgrade).count(waiting) >= 2)
        app.commit()
        upgrade.wait(timeout=WAIT)
    finally:
        app.close()
        output = stopped(upgrade) if upgrade else ""
    assert upgrade.returncode == 0, output
    assert output.endswith(f"jobs tables at version {schema.VERSION} (were at 2)\n")
    with psycopg.connect(private_url) as owner:
        assert schema.version(owner) == schema.VERSION


def test_a_role_that_may_only_read_and_write_queues_and_works_jobs(db, app_role):
    db.execute(RUNS)
    db.execute("TRUNCATE runs")
    granted(db, "SELECT, INSERT, UPDATE, DELETE")
    worker = None
    try:
        with psycopg.connect(app_role(), autocommit=True) as app:
            assert jobs.prepared(app) is app
            job = jobs.later(app, "deploy", "record", {})
            worker = start_worker(app_role(), "deploy")
            wait_for(lambda: scalar(db, "SELECT count(*) FROM runs") == 1, "the app role's worker to work the job")
    finally:
        output = stopped(worker) if worker else ""
    assert scalar(db, "SELECT job FROM runs") == job
    assert worker.returncode == 0, output


def test_behind_schema_and_a_role_that_cannot_upgrade_it_say_what_to_run(db, private_url, app_role):
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute("DELETE FROM job_schema WHERE version = %s", (schema.VERSION,))
    granted(db, "SELECT, INSERT, UPDATE, DELETE", "jobs_private")
    with psycopg.connect(app_role("jobs_private"), autocommit=True) as app:
        with pytest.raises(jobs.SchemaError) as refused:
            jobs.prepared(app)
    said = str(refused.value)  # the server's reason in brackets depends on what the last step changes
    assert said.startswith(
        f"the jobs tables are at version {schema.VERSION - 1} and this code needs {schema.VERSION}, "
        "but this role may not change them ("
    )
    assert "); run `python -m jobs prepare` once" in said, "the server's reason, then what to run"
    worker = start_worker(app_role("jobs_private"), "deploy")
    assert worker.wait(timeout=WAIT) == 3
    assert "this role may not change them" in stopped(worker)


def test_tables_an_older_copy_made_are_brought_up_to_date_and_keep_their_jobs(private_url):
    with psycopg.connect(private_url, autocommit=True) as owner:
        job = jobs.later(owner, "old", "record", {})
        owner.execute("DROP TABLE job_schema; DROP INDEX jobs_ready, jobs_scheduled; ALTER TABLE jobs DROP scheduled")
        owner.execute("CREATE INDEX jobs_due ON jobs (queue, priority, run_at, id) WHERE attempts < max_attempts")
        assert schema.version(owner) == 0
        jobs.prepared(owner)
        assert schema.version(owner) == schema.VERSION
        assert [(j["id"], j["scheduled"]) for j in jobs.listed(owner)] == [(job, False)]
        indexes = {row[0] for row in owner.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'jobs'")}
    assert {"jobs_ready", "jobs_scheduled"} <= indexes and "jobs_due" not in indexes


def test_the_table_is_set_up_for_churn(db):
    options = scalar(db, "SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass")
    assert sorted(options) == ["autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000", "fillfactor=50"]


def test_processes_preparing_a_new_database_at_once_take_each_step_once(private_url):
    with psycopg.connect(private_url, autocommit=True) as owner:
        owner.execute("DROP TABLE jobs, job_batches, job_schema")
    preparing = [start_command(private_url, "prepare") for _ in range(4)]
    codes = [process.wait(timeout=WAIT) for process in preparing]
    assert codes == [0] * 4, [stopped(process) for process in preparing]
    with psycopg.connect(private_url) as owner:
        assert [row[0] for row in owner.execute("SELECT version FROM job_schema ORDER BY version")] == list(
            schema.STEPS
        )


def test_every_job_gets_its_attempts_from_the_code(db, monkeypatch):
    monkeypatch.setattr(enqueue, "ATTEMPTS", 3)
    jobs.later(db, "default", "one", {})
    jobs.later_many(db, "default", "many", [{}, {}])
    assert [j["max_attempts"] for j in jobs.listed(db)] == [3, 3, 3]
