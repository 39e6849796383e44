"""An operator's hand on the queue through the API: pausing queues, cancelling jobs that wait or run."""

import pytest

import jobs
from jobs.store import claims, control
from jobs.store.claims import Hold

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch


def fine(db, args):
    pass


def test_pausing_and_resuming_a_queue_answers_whether_it_changed(db):
    assert jobs.paused(db, "mail") is True
    assert jobs.paused(db, "mail") is False
    assert jobs.paused(db, "reports") is True
    assert jobs.paused_queues(db) == {"mail", "reports"}
    assert jobs.resumed(db, "mail") is True
    assert jobs.resumed(db, "mail") is False
    assert jobs.paused_queues(db) == {"reports"}


@pytest.mark.parametrize("queue", ["", "  ", None, 7, "a\x00b"])
def test_pausing_refuses_anything_but_a_queue_s_name(db, queue):
    with pytest.raises(ValueError, match="name a queue"):
        jobs.paused(db, queue)
    assert jobs.paused_queues(db) == set()


def test_a_cancelled_waiting_job_never_runs_and_waits_on_the_shelf_to_be_retried(db):
    due = jobs.later(db, "default", "fine", {}, T)
    later_on = jobs.later(db, "default", "fine", {}, T + 60_000)
    answer = jobs.cancelled(db, due, later_on, now=T)
    assert (answer.shelved, answer.signalled, len(answer)) == ([due, later_on], [], 2)
    assert jobs.worked(db, "default", {"fine": fine}, T + 60_000) is None
    assert [(j["id"], j["failure"], j["reasons"]) for j in jobs.failed(db)] == [
        (later_on, "cancelled", ["cancelled"]),
        (due, "cancelled", ["cancelled"]),
    ]
    assert jobs.retried(db, due, now=T) == 1
    assert jobs.worked(db, "default", {"fine": fine}, T) == "ran fine"


def test_cancelling_a_job_on_the_shelf_or_no_job_changes_nothing(db):
    job = jobs.later(db, "default", "fine", {}, T)
    jobs.cancelled(db, job, now=T)
    assert len(jobs.cancelled(db, job, 999, now=T)) == 0
    assert [j["reasons"] for j in jobs.failed(db)] == [["cancelled"]]


@pytest.mark.parametrize("ids, error", [((), ValueError), ((None,), TypeError), (("7",), TypeError)])
def test_cancelling_refuses_an_unclear_choice_of_jobs(db, ids, error):
    job = jobs.later(db, "default", "fine", {}, T)
    with pytest.raises(error):
        jobs.cancelled(db, *ids)
    assert [j["id"] for j in jobs.listed(db) if j["failure"] == ""] == [job]


def test_a_running_job_is_marked_for_its_worker_and_settled_onto_the_shelf_as_cancelled(db):
    job = jobs.later(db, "default", "fine", {}, T)
    (held,) = claims.claimed(db, "default", T, hold=Hold(lease=30))
    assert jobs.cancelled(db, job, now=T + 1000).signalled == [job]
    assert jobs.failed(db) == [], "it runs on until its worker settles it"
    assert control.cancelled_among(db, [held]) == {job}
    assert control.cancellation_settled(db, held, now=T + 2000) is True
    (shelved,) = jobs.failed(db)
    assert (shelved["id"], shelved["failure"], shelved["failed_at"]) == (job, "cancelled", T + 2000)
    assert jobs.retried(db, job, now=T) == 1
    assert control.cancelled_among(db, claims.claimed(db, "default", T)) == set(), "a retried job is no longer marked"


def test_the_settlement_of_a_cancelled_job_is_refused_once_the_claim_is_not_its_own(db):
    job = jobs.later(db, "default", "fine", {}, T)
    (held,) = claims.claimed(db, "default", T, hold=Hold(lease=1))
    jobs.cancelled(db, job, now=T)
    assert claims.claimed(db, "default", T + 5000) == [], "its lease ran out, but a cancelled job is never claimed"
    assert [row.id for row in control.cancelled_reaped(db, now=T + 5000)] == [job], "the heartbeat shelves it"
    assert control.cancellation_settled(db, held, now=T + 5000) is False
    assert [shelved["id"] for shelved in jobs.failed(db)] == [job]


def test_a_cancelled_job_whose_worker_died_goes_on_the_shelf_and_is_not_run_again(db):
    job = jobs.later(db, "default", "fine", {}, T)
    claims.claimed(db, "default", T, hold=Hold(lease=1))
    jobs.cancelled(db, job, now=T)
    assert [row.id for row in control.cancelled_reaped(db, T + 5000)] == [job]
    assert jobs.worked(db, "default", {"fine": fine}, T + 5000) is None
    assert [(j["id"], j["failure"]) for j in jobs.failed(db)] == [(job, "cancelled")]


def test_a_cancelled_job_of_a_batch_counts_as_its_failure(db):
    batch = jobs.batch(db, "default", [("fine", {}), ("fine", {})], on_failure=("fine", {"callback": "on_failure"}))
    first = jobs.listed(db)[0]["id"]
    jobs.cancelled(db, first, now=T)
    ran = []
    while jobs.worked(db, "default", {"fine": lambda _, args: ran.append(args)}):
        pass
    assert ran == [{}, {"callback": "on_failure"}]
    assert jobs.batch_status(db, batch)["failed"] == 1


def test_a_cancelled_step_of_a_chain_queues_its_on_failure_and_not_the_next_step(db):
    jobs.chain(db, "default", [("fine", {"step": 1}), ("fine", {"step": 2})], on_failure=("fine", {"failed": True}))
    jobs.cancelled(db, jobs.listed(db)[0]["id"], now=T)
    assert [j["args"] for j in jobs.listed(db) if j["failure"] == ""] == [{"failed": True}]
