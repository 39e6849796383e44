"""Chains and batches: steps in order across restarts, and batch callbacks exactly once."""

import threading

import pytest

import jobs
from jobs.runtime.running import performed
from jobs.store import claims, flows
from jobs.store.claims import Hold
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.performers import NOTES, RUNS, performers
from tests.jobs.test_processes import worker_connections

CALLBACKS: dict[str, tuple[str, dict]] = {
    "on_success": ("done", {}),
    "on_failure": ("failed", {}),
    "always": ("finished", {}),
}


@pytest.fixture
def notes(db):
    """The tables the test performers write to, empty."""
    for table in (RUNS, NOTES):
        db.execute(table)
    db.execute("TRUNCATE runs, notes")
    return db


def noted(db, name):
    return scalar(db, "SELECT count(*) FROM notes WHERE name = %s", (name,))


def drained(db):
    """Works the default queue in this process until nothing is due."""
    while jobs.worked(db, "default", performers):
        pass


def run_on_six_workers(db, database_url, queue_them):
    workers = [start_worker(database_url, "default") for _ in range(6)]
    try:
        wait_for(lambda: worker_connections(db) == 18, "six workers with three connections each")
        queue_them()
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM jobs WHERE attempts < max_attempts") == 0, "the batch to drain"
        )
    finally:
        for worker in workers:
            stopped(worker)


def test_batch_of_240_on_six_workers_queues_each_callback_exactly_once(notes, database_url):
    members = [("row", {"n": n}) for n in range(240)]
    batch = []
    run_on_six_workers(notes, database_url, lambda: batch.append(jobs.batch(notes, "default", members, **CALLBACKS)))
    assert noted(notes, "row") == 240
    assert (noted(notes, "done"), noted(notes, "failed"), noted(notes, "finished")) == (1, 0, 1)
    assert jobs.batch_status(notes, batch[0]) | {"id": None} == {
        "id": None,
        "total": 240,
        "pending": 0,
        "failed": 0,
        "cancelled": 0,
        "finished": True,
        "cancelling": False,
    }


def test_batch_with_failing_jobs_on_six_workers_queues_on_failure_once_and_never_on_success(notes, database_url):
    members = [("doomed" if n % 60 == 7 else "row", {"n": n}) for n in range(240)]
    batch = []
    run_on_six_workers(notes, database_url, lambda: batch.append(jobs.batch(notes, "default", members, **CALLBACKS)))
    assert noted(notes, "row") == 236, "the rest of the batch kept running"
    assert (noted(notes, "done"), noted(notes, "failed"), noted(notes, "finished")) == (0, 1, 1)
    assert jobs.batch_status(notes, batch[0])["failed"] == 4


def test_every_job_and_callback_of_a_batch_sees_its_batch(notes):
    batch = jobs.batch(notes, "default", [("row", {}), ("row", {})], **CALLBACKS)
    drained(notes)
    assert notes.execute("SELECT name, batch FROM notes ORDER BY job").fetchall() == [
        ("row", batch),
        ("row", batch),
        ("done", batch),
        ("finished", batch),
    ]


def test_batch_status_counts_down_as_jobs_settle(notes):
    batch = jobs.batch(notes, "default", [("row", {}), ("doomed", {}), ("row", {})], **CALLBACKS)
    figures = [jobs.batch_status(notes, batch)]
    for _ in range(3):
        jobs.worked(notes, "default", performers)
        figures.append(jobs.batch_status(notes, batch))
    assert [(f["pending"], f["failed"], f["finished"]) for f in figures] == [
        (3, 0, False),
        (2, 0, False),
        (1, 1, False),
        (0, 1, True),
    ]
    assert [f["total"] for f in figures] == [3] * 4


def test_a_job_that_fails_then_succeeds_on_a_retry_has_not_failed_the_batch(notes):
    attempts = []

    def flaky(db, args):
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("once")

    batch = jobs.batch(notes, "default", [("flaky", {})], **CALLBACKS)
    assert jobs.worked(notes, "default", {"flaky": flaky}).startswith("failed flaky")
    assert jobs.worked(notes, "default", {"flaky": flaky}, jobs.now_ms() + 10_000) == "ran flaky"
    drained(notes)
    assert (noted(notes, "done"), noted(notes, "failed"), noted(notes, "finished")) == (1, 0, 1)
    assert jobs.batch_status(notes, batch)["failed"] == 0


def test_empty_batch_has_succeeded_the_moment_it_is_queued(notes):
    batch = jobs.batch(notes, "default", [], **CALLBACKS)
    assert jobs.batch_status(notes, batch)["finished"] is True
    drained(notes)
    assert (noted(notes, "done"), noted(notes, "failed"), noted(notes, "finished")) == (1, 0, 1)


def test_cancelling_skips_jobs_not_started_lets_running_ones_finish_and_queues_always(notes, connect):
    started, release = threading.Event(), threading.Event()

    def running(db, args):
        started.set()
        release.wait(10)
        performers["row"](db, args)

    members = [("running", {})] + [("row", {"n": n}) for n in range(5)]
    batch = jobs.batch(notes, "default", members, **CALLBACKS)
    worker = jobs.worker(connect, "default", {**performers, "running": running})
    try:
        assert started.wait(10)
        assert jobs.cancel_batch(notes, batch) == 5
        assert jobs.batch_status(notes, batch)["finished"] is False, "the running job has not settled yet"
        release.set()
        assert worker.wait_until_empty(10)
    finally:
        release.set()
        worker.stop()
        worker.join(10)
    assert (noted(notes, "running"), noted(notes, "row")) == (1, 0)
    assert (noted(notes, "done"), noted(notes, "failed"), noted(notes, "finished")) == (0, 0, 1)
    status = jobs.batch_status(notes, batch)
    assert (status["cancelled"], status["pending"], status["finished"]) == (5, 0, True)


def test_two_settlers_of_the_last_two_jobs_queue_the_callbacks_once(notes, connect):
    batch = jobs.batch(notes, "default", [("row", {}), ("row", {})], **CALLBACKS)
    with connect() as first, connect() as second:
        first_pid, second_pid = first.info.backend_pid, second.info.backend_pid
        with first.transaction():
            flows.counted(first, batch, settled=1, failed=0)
            # the second settler's statement now waits on the batch row the first holds
            racer = threading.Thread(target=lambda: flows.counted(second, batch, settled=1, failed=0))
            racer.start()
            wait_for(
                lambda: (
                    scalar(
                        notes,
                        "SELECT wait_event_type FROM pg_stat_activity WHERE datname = current_database() AND pid = %s",
                        (second_pid,),
                    )
                    == "Lock"
                ),
                "the second settler to wait on the first",
            )
            assert first_pid != second_pid
        racer.join(10)
        second.commit()
    callbacks = notes.execute("SELECT name FROM jobs WHERE flow ? 'callback' ORDER BY id").fetchall()
    assert callbacks == [("done",), ("finished",)]
    assert jobs.batch_status(notes, batch)["pending"] == 0


def test_a_settlement_counted_again_after_the_batch_finished_counts_nothing(notes):
    batch = jobs.batch(notes, "default", [("row", {})], **CALLBACKS)
    flows.counted(notes, batch, settled=1, failed=0)
    flows.counted(notes, batch, settled=1, failed=0)
    status = jobs.batch_status(notes, batch)
    assert (status["pending"], status["finished"]) == (0, True)
    assert scalar(notes, "SELECT count(*) FROM jobs WHERE flow ? 'callback'") == 2


def test_finished_batches_can_be_pruned(notes):
    old = jobs.batch(notes, "default", [], **CALLBACKS)
    running = jobs.batch(notes, "default", [("row", {})])
    assert jobs.pruned(notes, older_than=3600) == 0
    notes.execute("UPDATE job_batches SET finished_at = finished_at - 7200000 WHERE id = %s", (old,))
    assert jobs.pruned(notes, older_than=3600) == 1
    assert jobs.batch_status(notes, old) is None
    assert jobs.batch_status(notes, running) is not None


def test_chain_runs_its_steps_in_order_one_at_a_time(notes):
    jobs.chain(notes, "default", [("step", {"n": 1}), ("step", {"n": 2}), ("step", {"n": 3})])
    assert len(jobs.listed(notes)) == 1, "a chain is one job at a time"
    drained(notes)
    assert [r[0] for r in notes.execute("SELECT args->>'n' FROM notes ORDER BY job")] == ["1", "2", "3"]
    assert jobs.listed(notes) == []


def test_chain_survives_a_restart_between_two_steps(notes, database_url):
    jobs.chain(
        notes, "default", [("step", {"n": 1}), ("step", {"n": 2}), ("step", {"n": 3})], on_failure=("failed", {})
    )
    assert jobs.worked(notes, "default", performers) == "ran step"  # this process runs step one, then stops
    (waiting,) = jobs.listed(notes)
    assert waiting["args"] == {"n": 2}
    worker = start_worker(database_url, "default")  # another process takes the chain on
    try:
        wait_for(lambda: noted(notes, "step") == 3, "the other process to finish the chain")
        wait_for(lambda: jobs.listed(notes) == [], "the last step to settle")
    finally:
        stopped(worker)
    assert [r[0] for r in notes.execute("SELECT args->>'n' FROM notes ORDER BY job")] == ["1", "2", "3"]
    assert noted(notes, "failed") == 0


def test_chain_whose_middle_step_fails_for_good_stops_and_queues_on_failure_once(notes):
    steps = [("step", {"n": 1}), ("doomed", {}), ("step", {"n": 3})]
    jobs.chain(notes, "default", steps, on_failure=("failed", {"chain": "photos"}))
    drained(notes)
    assert [r[0] for r in notes.execute("SELECT name FROM notes ORDER BY job")] == ["step", "failed"]
    (doomed,) = jobs.listed(notes)
    assert (doomed["name"], doomed["failure"]) == ("doomed", "doomed")


def test_a_failing_chain_step_is_retried_like_any_job_before_the_chain_gives_up(notes):
    attempts = []

    def flaky(db, args):
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("not yet")

    jobs.chain(notes, "default", [("flaky", {}), ("step", {"n": 2})], on_failure=("failed", {}))
    moment = jobs.now_ms()
    while (told := jobs.worked(notes, "default", {**performers, "flaky": flaky}, moment)) or jobs.listed(notes):
        moment += 100_000
        assert moment < jobs.now_ms() + 10_000_000, told
    assert len(attempts) == 3
    assert (noted(notes, "step"), noted(notes, "failed")) == (1, 0)


@pytest.mark.parametrize(
    "steps, error",
    [
        ([], ValueError),
        ([("step", {"blob": b"x"})], TypeError),
        ([("step", {}), ("", {})], ValueError),
    ],
)
def test_a_bad_chain_is_refused_before_anything_is_written(notes, steps, error):
    with pytest.raises(error):
        jobs.chain(notes, "default", steps)
    assert jobs.listed(notes) == []


def test_batch_and_its_jobs_are_written_all_or_nothing(notes):
    notes.autocommit = False
    jobs.batch(notes, "default", [("row", {}), ("row", {})], **CALLBACKS)
    notes.rollback()
    notes.autocommit = True
    assert jobs.listed(notes) == []
    assert scalar(notes, "SELECT count(*) FROM job_batches") == 0


def test_cancelling_leaves_jobs_that_failed_for_good_alone(notes):
    batch = jobs.batch(notes, "default", [("doomed", {}), ("row", {"n": 1}), ("row", {"n": 2})], **CALLBACKS)
    assert jobs.worked(notes, "default", performers).startswith("failed doomed")
    in_work = claims.claimed(notes, "default", jobs.now_ms())
    assert jobs.cancel_batch(notes, batch) == 1
    assert jobs.batch_status(notes, batch)["finished"] is False
    assert performed(notes, in_work, performers) == ["ran row"]
    status = jobs.batch_status(notes, batch)
    assert (status["failed"], status["cancelled"], status["pending"], status["finished"]) == (1, 1, 0, True)
    assert [j["name"] for j in jobs.listed(notes) if j["failure"]] == ["doomed"]


def test_a_batch_job_whose_worker_died_on_its_last_attempt_counts_as_failed(notes, connect):
    batch = jobs.batch(notes, "default", [("row", {})], **CALLBACKS)
    notes.execute("UPDATE jobs SET max_attempts = 1")
    claims.claimed(notes, "default", jobs.now_ms(), hold=Hold(lease=0.001))  # claimed by a worker that then died
    worker = jobs.worker(connect, "other", {}, lease=0.2)  # its heartbeat reaps the lost job
    try:
        wait_for(lambda: jobs.batch_status(notes, batch)["finished"], "the lost job to be reaped and counted")
    finally:
        worker.stop()
        worker.join(10)
    assert jobs.batch_status(notes, batch)["failed"] == 1
    callbacks = [row[0] for row in notes.execute("SELECT name FROM jobs WHERE flow ? 'callback' ORDER BY id")]
    assert callbacks == ["failed", "finished"]
