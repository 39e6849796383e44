"""A cancelled job has one fate, however the cancel falls against its own end: on the shelf, once, nothing kept.

Each test lands an operator's cancel at one moment of a job's life: while its attempt
fails, after its performer returned but before its settlement, and while the listener
shelves it as the settlement runs. The job's writes, its chain's next step and its
batch's count then show whether it was settled once, as cancelled.
"""

import pytest

import jobs
from jobs.runtime import maintenance
from jobs.store import claims, control, flows
from tests.jobs.helpers import emptied, scalar


@pytest.fixture
def writes(db):
    emptied(db, "writes", "CREATE TABLE IF NOT EXISTS writes (job bigint, what text)")
    return lambda: db.execute("SELECT what FROM writes ORDER BY what").fetchall()


def written(conn, what):
    conn.execute("INSERT INTO writes VALUES (%s, %s)", (jobs.current_job().id, what))


def test_a_job_cancelled_while_it_runs_whose_attempt_then_fails_is_not_retried(db, connect, writes):
    """The failure comes before the listener's next look: the fence on the failure's statement catches it."""

    def cancelled_then_fails(conn, args):
        written(conn, "attempt")
        with connect() as operator:
            jobs.cancelled(operator, jobs.current_job().id)
            operator.commit()
        raise ConnectionError("upstream said 503")

    job = jobs.later(db, "default", "flaky", {})
    assert jobs.worked(db, "default", {"flaky": cancelled_then_fails}) == "cancelled flaky"
    [shelved] = jobs.failed(db)
    assert (shelved["id"], shelved["failure"], shelved["attempts"]) == (job, "cancelled", 1)
    assert jobs.worked(db, "default", {"flaky": cancelled_then_fails}) is None, "it is never claimed again"
    assert writes() == []


def test_a_job_cancelled_after_its_performer_returned_keeps_no_write_and_its_chain_fails_once(db, connect, writes):
    """The cancel lands between the performer's return and its settlement: the deletion's fence refuses it."""

    def step(conn, args):
        written(conn, "step")
        with connect() as operator:  # the operator's click comes as the performer returns
            jobs.cancelled(operator, jobs.current_job().id)
            operator.commit()

    performers = {
        "step": step,
        "next_step": lambda conn, args: written(conn, "next_step"),
        "on_fail": lambda conn, args: written(conn, "on_fail"),
    }
    first = jobs.chain(db, "default", [("step", {}), ("next_step", {})], on_failure=("on_fail", {}))
    assert jobs.worked(db, "default", performers) == "cancelled step"
    assert jobs.worked(db, "default", performers) == "ran on_fail"
    assert jobs.worked(db, "default", performers) is None, "the chain's next step was never queued"
    assert writes() == [("on_fail",)]
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(first, "cancelled")]


def listener_shelves_it_first(monkeypatch, connect):
    """Makes the listener's look at cancelled jobs, and an operator's cancel, land just before the settlement's
    deletion."""
    finished = claims.finished_one  # the deletion of a job that wrote, on its own transaction

    def cancelled_first(conn, job):
        with connect() as listener:
            listener.autocommit = True
            jobs.cancelled(listener, job.id)
            maintenance.cancelled_in_hand(listener, [job])
        return finished(conn, job)

    monkeypatch.setattr(claims, "finished_one", cancelled_first)
    return finished


def test_a_cancel_the_listener_settles_before_the_deletion_moves_the_chain_on_once(db, connect, writes, monkeypatch):
    performers = {
        "step": lambda conn, args: written(conn, "step"),
        "next_step": lambda conn, args: written(conn, "next_step"),
        "on_fail": lambda conn, args: written(conn, "on_fail"),
    }
    jobs.chain(db, "default", [("step", {}), ("next_step", {})], on_failure=("on_fail", {}))
    finished = listener_shelves_it_first(monkeypatch, connect)
    assert jobs.worked(db, "default", performers) == "cancelled step"
    monkeypatch.setattr(claims, "finished_one", finished)
    assert jobs.worked(db, "default", performers) == "ran on_fail"
    assert jobs.worked(db, "default", performers) is None, "only on_failure was queued, not the next step too"
    assert writes() == [("on_fail",)]


def test_a_cancel_the_listener_settles_before_the_deletion_counts_once_in_its_batch(db, connect, writes, monkeypatch):
    performers = {
        name: (lambda what: lambda conn, args: written(conn, what))(name)
        for name in ("member", "on_success", "on_failure", "always")
    }
    batch = jobs.batch(
        db,
        "default",
        [("member", {})] * 3,
        on_success=("on_success", {}),
        on_failure=("on_failure", {}),
        always=("always", {}),
    )
    finished = listener_shelves_it_first(monkeypatch, connect)
    assert jobs.worked(db, "default", performers) == "cancelled member"
    monkeypatch.setattr(claims, "finished_one", finished)
    status = jobs.batch_status(db, batch)
    assert (status["pending"], status["failed"], status["finished"]) == (2, 1, False), "counted once, as failed"
    while jobs.worked(db, "default", performers) is not None:
        pass
    assert writes() == [("always",), ("member",), ("member",), ("on_failure",)]
    assert scalar(db, "SELECT pending FROM job_batches WHERE id = %s", (batch,)) == 0


def test_a_cancelled_job_given_back_unstarted_is_shelved_not_claimed_again(db):
    job = jobs.later(db, "default", "never", {})
    held = claims.claimed(db, "default")
    jobs.cancelled(db, job)
    flows.given_back(db, held)  # a shutdown gives it back before the listener heard of the cancel
    assert claims.claimed(db, "default") == [], "a cancelled job is never claimed"
    with db.transaction():
        assert [row.id for row in control.cancelled_reaped(db)] == [job]
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(job, "cancelled")]


def test_a_cancelled_job_whose_connection_was_cut_is_shelved_not_claimed_again(db):
    job = jobs.later(db, "default", "never", {})
    held = claims.claimed(db, "default")
    jobs.cancelled(db, job)
    claims.lapsed(
        db, [(j.id, j.claim) for j in held]
    )  # its work thread lost its connection, and lets its lease run out
    assert claims.claimed(db, "default") == []
    with db.transaction():
        assert [row.id for row in control.cancelled_reaped(db)] == [job]


def operator_cancels(connect, job, heard: bool) -> None:
    """An operator cancels `job`; with `heard`, the worker's listener hears of it at once."""
    with connect() as operator:
        operator.autocommit = True
        jobs.cancelled(operator, job.id)
        if heard:
            maintenance.cancelled_in_hand(operator, [job])


@pytest.mark.parametrize("heard", [False, True], ids=["before the listener hears", "heard by the listener"])
def test_a_job_cancelled_past_its_point_of_no_return_ends_as_it_succeeded_and_is_not_on_the_shelf(
    db, connect, writes, heard
):
    def sends(conn, args):
        jobs.current_job().point_of_no_return()  # what follows (a letter handed over) no rollback undoes
        operator_cancels(connect, jobs.current_job(), heard)
        written(conn, "sent")

    jobs.later(db, "default", "sends", {})
    assert jobs.worked(db, "default", {"sends": sends}) == "ran sends"
    assert jobs.failed(db) == [] and jobs.listed(db) == [], "nothing left on the shelf for a retry to do again"
    assert writes() == [("sent",)]


def test_a_job_cancelled_past_its_point_of_no_return_that_writes_nothing_is_deleted_with_its_neighbours(db, connect):
    def sends(conn, args):
        jobs.current_job().point_of_no_return()
        operator_cancels(connect, jobs.current_job(), heard=False)

    jobs.later(db, "default", "sends", {})
    assert jobs.worked(db, "default", {"sends": sends}) == "ran sends"
    assert jobs.listed(db) == []


def test_a_job_cancelled_before_its_point_of_no_return_stops_there_and_is_on_the_shelf(db, connect, writes):
    def sends(conn, args):
        operator_cancels(connect, jobs.current_job(), heard=True)
        jobs.current_job().point_of_no_return()
        written(conn, "sent")

    job = jobs.later(db, "default", "sends", {})
    assert jobs.worked(db, "default", {"sends": sends}) == "cancelled sends"
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(job, "cancelled")]
    assert writes() == []
