"""Sending a letter later: the step between the request that writes a letter and the worker that sends it.

`delivered_later` turns the letter into a row of the jobs table (job `deliver` on
queue QUEUE), written on the caller's transaction, as Action Mailer's
deliver_later does; a worker running `performers` sends it with `delivered`.
"""

import os
from dataclasses import asdict

import jobs

from .letters import Letter, Refused, refusal
from .transports import delivered

QUEUE = "mail"  # the queue letters wait on


def delivered_later(db, m: Letter) -> int:
    """Queues `m` to be sent by a worker on the `mail` queue, and returns the job's id.

    The job is written on `db`'s current transaction: if that rolls back, the letter
    was never queued. A letter `delivered` would refuse is refused here with
    Refused, before anything is written, so the request that made it hears why.
    """
    reason = refusal(m)
    if reason:
        raise Refused(reason)
    return jobs.later(db, QUEUE, "deliver", asdict(m))


def deliver(db, args: dict) -> None:
    """The `deliver` job: sends the letter its arguments hold."""
    delivered(Letter(**args))


def performers_for(intervals: str) -> dict:
    """The performers of the `mail` queue, with the retry schedule `intervals` describes.

    `intervals` is the waits after each failed attempt, in seconds, separated by
    commas ("1,1,2": four attempts in all), as MAIL_RETRY_INTERVALS holds it. When it
    is empty, `deliver` keeps jobs' default schedule (jobs.ATTEMPTS attempts).
    """
    if not intervals.strip():
        return {"deliver": deliver}
    try:
        waits = [float(wait) for wait in intervals.split(",")]
    except ValueError:
        raise ValueError(f"MAIL_RETRY_INTERVALS takes seconds separated by commas, got {intervals!r}") from None

    @jobs.policy(backoff=jobs.intervals(*waits))
    def deliver_on_schedule(db, args: dict) -> None:
        """The `deliver` job, retried on the schedule given."""
        deliver(db, args)

    return {"deliver": deliver_on_schedule}


performers = performers_for(os.environ.get("MAIL_RETRY_INTERVALS", ""))
