"""Failure policies: each schedule, the exceptions worth a retry, on_error and current_job().final.

Every schedule is read off the table by working the job at the moment its last failure
chose, so no test waits for a retry.
"""

import logging

import pytest

import jobs

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch


def failing(error=RuntimeError, policy=None):
    """A performer that always raises `error`, carrying `policy` (a dict for jobs.policy, or a Policy)."""

    def perform(db, args):
        raise error("it broke")

    if isinstance(policy, jobs.Policy):
        perform.policy = policy
    elif policy is not None:
        perform = jobs.policy(**policy)(perform)
    return perform


def worked_until_failed_for_good(db, perform) -> tuple[list[float], int]:
    """Works one job of `perform` at each moment it is due again; returns the waits in seconds and the attempts made."""
    job = jobs.later(db, "default", "job", {}, T)
    waits: list[float] = []
    moment = T
    while True:
        outcome = jobs.worked(db, "default", {"job": perform}, moment)
        assert outcome and outcome.startswith("failed job"), outcome
        (row,) = jobs.listed(db)
        if row["attempts"] >= row["max_attempts"]:
            assert [j["id"] for j in jobs.failed(db)] == [job]
            return waits, row["attempts"]
        waits.append((row["run_at"] - moment) / 1000)
        moment = row["run_at"]


SCHEDULES = {
    "polynomial by default": (failing(), [3, 18, 83, 258], 5),
    "polynomial, declared": (failing(policy={}), [3, 18, 83, 258], 5),
    "exponential capped at 30 s": (
        failing(policy={"attempts": 8, "backoff": jobs.exponential()}),
        [1, 2, 4, 8, 16, 30, 30],
        8,
    ),
    "exponential of its own": (failing(policy={"backoff": jobs.exponential(first=0.5, cap=3)}), [0.5, 1, 2, 3], 5),
    "intervals, then failed for good": (failing(policy={"backoff": jobs.intervals(5, 60, 600)}), [5, 60, 600], 4),
    "intervals cut short by attempts": (failing(policy={"attempts": 2, "backoff": jobs.intervals(5, 60, 600)}), [5], 2),
    "retry_on, an exception it names": (
        failing(TimeoutError, {"retry_on": (TimeoutError,), "attempts": 3}),
        [3, 18],
        3,
    ),
    "retry_on, any other exception": (failing(ValueError, {"retry_on": (TimeoutError,)}), [], 1),
    "NO_RETRY": (failing(policy=jobs.NO_RETRY), [], 1),
    "one attempt": (failing(policy={"attempts": 1}), [], 1),
}


@pytest.mark.parametrize("perform, waits, attempts", SCHEDULES.values(), ids=SCHEDULES.keys())
def test_each_policy_waits_its_schedule_then_fails_for_good(db, perform, waits, attempts):
    assert worked_until_failed_for_good(db, perform) == (waits, attempts)


def test_on_error_is_called_after_every_failure_with_the_job_and_its_exception(db):
    calls, raised = [], []

    @jobs.policy(attempts=3, backoff=jobs.intervals(1, 1), on_error=lambda job, error: calls.append((job, error)))
    def broken(db, args):
        raised.append(RuntimeError(f"failure {len(raised) + 1}"))
        raise raised[-1]

    job = jobs.later(db, "default", "broken", {"n": 7}, T)
    for moment in (T, T + 1000, T + 2000):
        jobs.worked(db, "default", {"broken": broken}, moment)
    assert [(j.id, j.name, j.args, j.attempt, j.final) for j, _ in calls] == [
        (job, "broken", {"n": 7}, 1, False),
        (job, "broken", {"n": 7}, 2, False),
        (job, "broken", {"n": 7}, 3, True),
    ]
    assert all(error is expected for (_, error), expected in zip(calls, raised, strict=True))


def test_on_error_is_called_for_an_exception_not_worth_a_retry(db):
    calls = []
    perform = failing(ValueError, {"retry_on": (TimeoutError,), "on_error": lambda job, error: calls.append(error)})
    jobs.later(db, "default", "job", {}, T)
    jobs.worked(db, "default", {"job": perform}, T)
    assert [type(error) for error in calls] == [ValueError]


def test_an_on_error_that_raises_is_logged_and_the_failure_still_recorded(db, caplog):
    def hook(job, error):
        raise KeyError("the hook broke")

    jobs.later(db, "default", "job", {}, T)
    with caplog.at_level(logging.ERROR, logger="jobs"):
        told = jobs.worked(db, "default", {"job": failing(policy={"on_error": hook})}, T)
    assert told == "failed job on attempt 1: it broke"
    assert "on_error of job 1 (job on default) raised" in caplog.text
    assert jobs.listed(db)[0]["reasons"] == ["it broke"]


FINALS = {
    "default": ({}, 5),
    "attempts": ({"attempts": 3}, 3),
    "intervals": ({"backoff": jobs.intervals(1, 1)}, 3),
    "one attempt": ({"attempts": 1}, 1),
}


@pytest.mark.parametrize("policy, attempts", FINALS.values(), ids=FINALS.keys())
def test_current_job_is_final_exactly_on_the_last_attempt(db, policy, attempts):
    seen = []

    @jobs.policy(**policy)
    def broken(db, args):
        job = jobs.current_job()
        seen.append((job.attempt, job.final))
        raise RuntimeError("it broke")

    assert worked_until_failed_for_good(db, broken)[1] == attempts
    assert seen == [(n, n == attempts) for n in range(1, attempts + 1)]


def test_current_job_tells_a_performer_its_id_name_queue_attempt_and_batch(db):
    seen = []
    job = jobs.later(db, "mail", "look", {}, T)
    jobs.worked(db, "mail", {"look": lambda *_: seen.append(jobs.current_job())}, T)
    (current,) = seen
    assert (current.id, current.name, current.queue, current.attempt, current.final, current.batch) == (
        job,
        "look",
        "mail",
        1,
        False,
        None,
    )


def test_current_job_is_refused_outside_a_performer():
    with pytest.raises(LookupError):
        jobs.current_job()
