"""A job past its point of no return is never started again by its worker: not at a stop's grace, not at a timeout.

Its performer has done what no rollback undoes (handed a letter over), and then its
worker lets it go: a stop's grace ran out, or its timeout did. It is shelved, saying so,
for an operator to look at, whatever attempts its policy has left; one let go before
that point is stopped there when it reaches it.
"""

import threading

import pytest

import jobs
from tests.jobs.helpers import wait_for

HOLD = 10.0  # seconds a performer waits, at the most, for the test to let it return


class Mailroom:
    """A performer that hands a letter over at its point of no return, then waits for the test to let it return."""

    def __init__(self):
        self.sent, self.kept_back, self.workers = [], [], []
        self.released = threading.Event()

    def deliver(self, conn, args):
        job = jobs.current_job()
        if job.attempt == 1:
            job.cancelled.wait(args.get("before", 0))  # a performer that waits to be told it was let go
        try:
            job.point_of_no_return()
        except jobs.JobCancelled:
            self.kept_back.append(job.attempt)
            raise
        self.sent.append(job.attempt)
        self.released.wait(HOLD if job.attempt == 1 else 0)  # the server's answer is slow, the first time

    def worker(self, connect, **policy):
        """A worker on "mail" whose `deliver` is this mailroom's under `policy`; stopped after the test."""

        @jobs.policy(**policy)
        def deliver(conn, args):
            self.deliver(conn, args)

        self.workers.append(jobs.worker(connect, "mail", {"deliver": deliver}))
        return self.workers[-1]

    def shelved(self, db):
        """The reasons of the jobs on the shelf, once one is there or the letter was handed over twice."""
        wait_for(lambda: jobs.failed(db) or len(self.sent) > 1, "the job on the shelf, or a second letter")
        return [row["failure"] for row in jobs.failed(db)]


@pytest.fixture
def mailroom():
    room = Mailroom()
    yield room
    room.released.set()
    for worker in room.workers:
        worker.stop()
    assert all(worker.join(10) for worker in room.workers)


def test_a_job_past_its_point_of_no_return_when_a_stop_s_grace_ends_is_shelved_not_given_back(db, connect, mailroom):
    first = mailroom.worker(connect, attempts=3)
    jobs.later(db, "mail", "deliver", {})
    wait_for(lambda: mailroom.sent, "the letter to be handed over")
    mailroom.worker(connect, attempts=3)  # another worker, which would take a job given back
    first.stop(grace=0.2)
    assert first.join(10)
    reasons = mailroom.shelved(db)
    assert mailroom.sent == [1], "handed over once"
    assert reasons == ["its worker stopped and its grace ran out, past its point of no return: not tried again"]
    assert first.counts.given_back == 0 and first.counts.failed == 1


def test_a_job_that_times_out_past_its_point_of_no_return_is_shelved_not_retried(db, connect, mailroom):
    worker = mailroom.worker(connect, timeout=0.3, backoff=jobs.intervals(0, 0))
    jobs.later(db, "mail", "deliver", {})
    reasons = mailroom.shelved(db)
    assert mailroom.sent == [1], "handed over once"
    assert reasons == ["timed out after 0.3 s, past its point of no return: not tried again"]
    assert worker.counts.timed_out == 1 and worker.counts.failed == 1


def test_a_job_let_go_before_its_point_of_no_return_stops_there_and_its_retry_hands_it_over(db, connect, mailroom):
    worker = mailroom.worker(connect, timeout=0.3, backoff=jobs.intervals(0))
    jobs.later(db, "mail", "deliver", {"before": HOLD})  # it reaches the point only once let go
    wait_for(lambda: mailroom.kept_back and mailroom.sent, "the first attempt kept back, the second sent")
    assert worker.wait_until_empty(10)
    assert (mailroom.kept_back, mailroom.sent) == ([1], [2])
