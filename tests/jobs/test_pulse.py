"""The queue's pulse: a worker's counts per queue and minute reach job_pulse, add up across workers, survive a
failed flush and a stop, and are pruned past PULSE_KEPT; the waits' median and p95 come from their buckets."""

import threading

import psycopg
import pytest

import jobs
from jobs.store import claims, pulse
from jobs.store.pulse import MINUTE, PULSE_KEPT, WAIT_BUCKETS, Pulse, quantile
from tests.jobs.helpers import scalar, wait_for


@pytest.fixture
def rollup(db):
    """The db fixture's connection, with job_pulse empty."""
    db.execute("TRUNCATE job_pulse")
    return db


def totals(db, queue):
    """What job_pulse holds for `queue`, summed over its minutes."""
    return db.execute(
        "SELECT coalesce(sum(queued), 0), coalesce(sum(finished), 0), coalesce(sum(retried), 0), "
        "coalesce(sum(failed), 0) FROM job_pulse WHERE queue = %s",
        (queue,),
    ).fetchone()


def claimed_at(db, due: list[int], now: int, queue: str = "default"):
    """Claims jobs of `queue` due at each moment of `due`, at the fixed moment `now`."""
    for moment in due:
        jobs.later(db, queue, "noop", {}, moment)
    claims.promoted(db, now)
    return claims.claimed(db, queue, now, limit=len(due))


def test_a_workers_claims_and_settlements_reach_the_rollup_per_queue(rollup, connect, monkeypatch):
    """Three successes on mail, one retried failure and one failure for good on reports."""
    monkeypatch.setattr(pulse, "PULSE_EVERY", 0.1)

    @jobs.policy(attempts=2, backoff=lambda attempt: 0)
    def flaky(db, args):
        raise RuntimeError("not this time")

    worker = jobs.worker(connect, ["mail", "reports"], {"noop": lambda db, args: None, "flaky": flaky}, poll=0.1)
    try:
        for _ in range(3):
            jobs.later(rollup, "mail", "noop", {})
        jobs.later(rollup, "reports", "flaky", {})
        wait_for(lambda: totals(rollup, "mail") == (3, 3, 0, 0), "the mail queue's three successes in job_pulse")
        wait_for(lambda: totals(rollup, "reports") == (1, 0, 1, 1), "the retry and the failure for good")
    finally:
        worker.stop()
        worker.join(10)
    claims = scalar(rollup, "SELECT sum(w) FROM job_pulse, unnest(waits) AS w")
    assert claims == 5, "every claim's wait is in a bucket: three of mail, two attempts of reports"
    assert scalar(rollup, "SELECT count(*) FROM job_pulse WHERE mod(minute, %s) <> 0", (MINUTE,)) == 0


def test_a_claims_wait_is_counted_from_due_to_the_claim_in_its_bucket(rollup):
    """Due 5 ms, 400 ms and 2 hours before the claim: the first bucket, the one up to 500, the one past all."""
    now = claims.now_ms()
    counted = Pulse()
    counted.claimed(claimed_at(rollup, [now - 5, now - 400, now - 2 * 3600 * 1000], now))
    counted.flushed(rollup)
    waits = scalar(rollup, "SELECT waits FROM job_pulse WHERE queue = 'default'")
    expected = [0] * (len(WAIT_BUCKETS) + 1)
    expected[0] = expected[WAIT_BUCKETS.index(500)] = expected[-1] = 1
    assert waits == expected
    assert scalar(rollup, "SELECT minute FROM job_pulse") == now - now % MINUTE, "the claim's minute"
    assert counted.waits["default"].total == 5 + 400 + 2 * 3600 * 1000


def test_two_workers_flushing_the_same_minute_add_up(rollup):
    now = claims.now_ms()
    first, second = Pulse(), Pulse()
    first.claimed(claimed_at(rollup, [now - 5], now))
    second.claimed(claimed_at(rollup, [now - 5, now - 40], now))
    for counted in (first, second):
        counted.settled([("default", "processed", False)])
        counted.flushed(rollup)
    assert totals(rollup, "default") == (3, 2, 0, 0)
    waits = rollup.execute("SELECT sum(waits[1]), sum(waits[2]), sum(waits[3]) FROM job_pulse").fetchone()
    assert waits == (2, 1, 0), "element by element: two waits of up to 10 ms, one of up to 50"
    assert scalar(rollup, "SELECT count(*) FROM job_pulse") <= 2, "one row per minute and queue"


def test_a_flush_that_fails_keeps_its_counts_for_the_next(rollup, connect):
    counted = Pulse()
    counted.settled([("default", "processed", False)])
    lost = connect()
    lost.close()
    with pytest.raises(psycopg.OperationalError):
        counted.flushed(lost)
    counted.settled([("default", "failed", True)])  # counted meanwhile
    assert counted.flushed(rollup) >= 1
    assert totals(rollup, "default") == (0, 1, 0, 1)
    assert counted.flushed(rollup) == 0, "nothing is written twice"
    assert totals(rollup, "default") == (0, 1, 0, 1)


def test_a_stopping_worker_writes_its_last_counts(rollup, connect, monkeypatch):
    """No flush falls due while it works (PULSE_EVERY an hour, past the first, in the listener's first step, with
    the worker's first claims): its stop writes them. The job is due a little after that step."""
    monkeypatch.setattr(pulse, "PULSE_EVERY", 3600)
    worker = jobs.worker(connect, "default", {"noop": lambda db, args: None}, poll=0.1)
    try:
        wait_for(worker.gate.claimable, "the worker to be ready to claim")
        jobs.later(rollup, "default", "noop", {}, jobs.now_ms() + 300)
        wait_for(lambda: worker.counts.processed == 1, "the job to run")
        assert totals(rollup, "default") == (0, 0, 0, 0)
    finally:
        worker.stop()
        assert worker.join(10)
    assert totals(rollup, "default") == (1, 1, 0, 0)


def test_the_reaper_deletes_the_minutes_past_PULSE_KEPT(rollup):
    now = claims.now_ms()
    old, recent = now - PULSE_KEPT - MINUTE, now - MINUTE
    for minute in (old, recent):
        rollup.execute("INSERT INTO job_pulse (minute, queue, waits) VALUES (%s, 'default', '{}')", (minute,))
    assert pulse.pruned(rollup) == 1
    assert scalar(rollup, "SELECT array_agg(minute) FROM job_pulse") == [recent]


@pytest.mark.parametrize(
    ("buckets", "share", "expected"),
    [
        ({0: 10}, 0.5, 5.0),  # half of the first bucket, from 0 to its bound of 10 ms
        ({1: 4}, 0.5, 30.0),  # halfway between 10 and 50
        ({0: 50, 2: 50}, 0.95, 95.0),  # the 95th of 100 claims: the 45th of the 50 between 50 and 100
        ({len(WAIT_BUCKETS): 3}, 0.5, float(WAIT_BUCKETS[-1])),  # past every bound: at least the last
        ({}, 0.5, None),  # no claim, no wait
    ],
)
def test_a_quantile_is_estimated_within_its_bucket(buckets, share, expected):
    waits = [buckets.get(index, 0) for index in range(len(WAIT_BUCKETS) + 1)]
    assert quantile(waits, share) == expected


def test_a_cancel_or_a_lost_lease_counts_nowhere_and_a_dropped_attempt_as_retried(rollup):
    counted = Pulse()
    outcomes = ["cancelled", "lease_lost", "dropped", "rescheduled", "processed"]
    counted.settled([("default", kind, False) for kind in outcomes] + [("default", "dropped", True)])
    counted.flushed(rollup)
    assert totals(rollup, "default") == (0, 1, 2, 1)


def test_a_job_given_back_unstarted_is_counted_queued_and_waited_once(rollup, connect):
    """A batch of two, the slow job first: the quick one behind it is given back (its attempt not counted), then
    claimed again as a first attempt. Eight jobs queued and finished are eight queued and eight claims' waits."""
    behind = threading.Event()

    def slow(db, args):
        assert behind.wait(10), "the job behind this one was not given back"

    worker = jobs.worker(connect, "default", {"noop": lambda db, args: None, "slow": slow}, threads=1)
    try:
        wait_for(worker.gate.claimable, "the worker to be ready to claim")
        with rollup.transaction():
            jobs.later(rollup, "default", "noop", {})
            jobs.later(rollup, "default", "slow", {})
            for _ in range(6):
                jobs.later(rollup, "default", "noop", {})
        wait_for(lambda: worker.counts.given_back >= 1, "the job claimed behind the slow one to be given back")
        behind.set()
        assert worker.wait_until_empty(10)
    finally:
        worker.stop()
        assert worker.join(10)
    assert totals(rollup, "default") == (8, 8, 0, 0)
    assert scalar(rollup, "SELECT sum(w) FROM job_pulse, unnest(waits) AS w") == 8, "a claim given back is no wait"
