"""Sending a letter later: the step between the request that asks for a letter and the worker that sends it.

`delivered_later` turns a letter into a row of the jobs table (job `deliver` on queue
QUEUE), written on the caller's transaction; `written_later` queues only what a letter is
written from (job `write`), and the worker writes it when it leaves, as Action Mailer's
deliver_later renders its letter when the job runs. A worker running `performers` sends both.
"""

import os
import smtplib
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import psycopg

import jobs

from .letters import Letter, Refused, refusal
from .transports import TIMEOUT, delivered

QUEUE = "mail"  # the queue letters wait on
PERMANENT = 500  # SMTP answers from this code up refuse a letter for good; 4xx ones are worth a retry
EXCHANGES = 6  # SMTP exchanges of one letter at the most: connect, EHLO, STARTTLS, login, send, QUIT
DELIVER_TIMEOUT = EXCHANGES * TIMEOUT  # seconds a `deliver` job may run: every exchange at its own limit
# A letter's body carries its links, live secrets until they expire: no viewer of the queue shows it.
SECRET_ARGS = ("body",)

# A job of the queue, as a worker runs it: perform(db, args), `db` standing for the worker's
# connection (jobs hands a guarded stand-in for it), `args` the job's arguments.
Performer = Callable[[Any, dict[str, Any]], None]
# How a `write` job writes the letter of its kind, when it runs: writer(db, args) answers the letter,
# or None when there is no longer anything to send (the account is gone, or has what the letter was for).
Writer = Callable[[Any, dict[str, Any]], Letter | None]


class Undeliverable(Exception):
    """The mail server refused the letter for good (a 5xx answer): another attempt would not help."""


class Unconfirmed(Exception):
    """The mail server was handed the letter and gave no answer (it timed out, or hung up): it may have it, so the
    letter is not handed over again."""


def delivered_later(db: psycopg.Connection[Any], m: Letter, *, priority: int = 0) -> int:
    """Queues `m` to be sent by a worker on the `mail` queue, and returns the job's id.

    Of the letters due, those of a lower `priority` are sent first (jobs' own order):
    a letter somebody waits for at the screen can go ahead of a backlog of others.

    The job is written on `db`'s current transaction: if that rolls back, the letter
    was never queued. A letter `delivered` would refuse is refused here with
    Refused, before anything is written, so the request that made it hears why.
    Its body is a secret argument of the job (SECRET_ARGS): the dashboard never shows
    it, and a failure's reason and traceback are kept without its links.
    """
    reason = refusal(m)
    if reason:
        raise Refused(reason)
    job = jobs.later(db, QUEUE, "deliver", asdict(m), secret=SECRET_ARGS, priority=priority)
    assert job is not None  # jobs.later answers None only for a job with a unique key, and this one has none
    return job


def written_later(
    db: psycopg.Connection[Any], kind: str, args: dict[str, Any], *, priority: int = 0, unique: str | None = None
) -> int | None:
    """Queues job `write`, which writes the letter of `kind` from `args` when it runs, and sends it; the job's id.

    For a letter whose link is a secret that dies (a reset, an unlock): the row holds no
    link, only what the letter is written from (no secret, so no viewer of the queue has
    anything to hide), and the link is made when the letter leaves, so no time spent in
    the queue shortens its life. The writers given to `performers_for` write each kind.
    With `unique`, nothing is queued and None is answered while a job of that key waits
    or runs: asking again while the letter waits is asking for the same letter. The job is
    written on `db`'s current transaction, at `priority`, as `delivered_later` writes its.
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"written_later takes the kind of letter as a name, got {kind!r}")
    return jobs.later(db, QUEUE, "write", {**args, "kind": kind}, priority=priority, unique=unique)


def write(db: object, args: dict[str, Any], writers: dict[str, Writer]) -> None:
    """The `write` job: writes its letter now, with the writer of its kind, and sends it as `deliver` does.

    Each attempt writes the letter again, so a retried one carries a link made when it
    leaves. A kind no writer knows fails the job for good (Undeliverable).
    """
    writer = writers.get(args["kind"])
    if writer is None:
        raise Undeliverable(f"no writer knows letters of kind {args['kind']!r}: known are {sorted(writers)}")
    letter = writer(db, args)
    if letter is not None:
        handed_over(letter)


def deliver(db: object, args: dict[str, Any]) -> None:
    """The `deliver` job: sends the letter its arguments hold (see `handed_over`)."""
    handed_over(Letter(**args))


def handed_over(m: Letter) -> None:
    """Sends `m` as a job of the mail queue does, saying which failures are worth another attempt.

    A server that is down, slow or answers 4xx raises an OSError (smtplib's errors are
    OSErrors), which the mail queue's policy retries. A 5xx answer to the letter itself
    raises Undeliverable, which fails the job for good at once, with the server's answer
    as its reason (of an answer to the letter itself, only its codes: transports.unquoted).
    A failed sign-in to the server is left retryable: it is the configuration that is
    wrong, not the letter.

    Just before the letter is handed to the server, the job passes its point of no
    return (jobs.Job.point_of_no_return): an operator's cancel the worker has heard by
    then keeps the letter back; one it hears later lets it go, and the job ends as
    sent, so no retry from the shelf sends it twice. Past that point, no answer at all
    (the server timed out or hung up: smtplib's SMTPServerDisconnected) raises
    Unconfirmed, which fails the job for good rather than send the letter twice; and a
    job that runs past DELIVER_TIMEOUT then is shelved by its worker, not retried.
    """
    job = jobs.current_job()
    try:
        delivered(m, handing_over=job.point_of_no_return)
    except smtplib.SMTPServerDisconnected as error:
        if job.irrevocable:
            raise Unconfirmed(
                f"the mail server was handed the letter and gave no answer ({error}): it may have it, "
                "so it is not sent again"
            ) from error
        raise
    except smtplib.SMTPRecipientsRefused as error:
        codes = [code for code, _ in error.recipients.values()]
        if codes and min(codes) >= PERMANENT:
            raise Undeliverable(f"the mail server refused every recipient: {error.recipients}") from error
        raise
    except (smtplib.SMTPSenderRefused, smtplib.SMTPDataError) as error:
        if error.smtp_code >= PERMANENT:
            raise Undeliverable(
                f"the mail server refused the letter: {error.smtp_code} {error.smtp_error!r}"
            ) from error
        raise


def performers_for(intervals: str, writers: dict[str, Writer] | None = None) -> dict[str, Performer]:
    """The performers of the `mail` queue, with the retry schedule `intervals` describes.

    `deliver` sends the letters `delivered_later` queued; with `writers` (a writer for each
    kind of letter `written_later` queues), `write` writes and sends those, on the same schedule.

    `intervals` is the waits after each failed attempt, in seconds, separated by
    commas ("1,1,2": four attempts in all), as MAIL_RETRY_INTERVALS holds it. When it
    is empty, `deliver` keeps jobs' default schedule (jobs.ATTEMPTS attempts). Either
    way only OSErrors (a server down or saying "try later", or an attempt that ran
    past DELIVER_TIMEOUT) before the letter was handed over are retried.
    """
    backoff: Callable[[int], float | None]
    if not intervals.strip():
        backoff = jobs.polynomial
    else:
        try:
            backoff = jobs.intervals(*[float(wait) for wait in intervals.split(",")])
        except ValueError:
            raise ValueError(f"MAIL_RETRY_INTERVALS takes seconds separated by commas, got {intervals!r}") from None

    @jobs.policy(backoff=backoff, retry_on=(OSError,), timeout=DELIVER_TIMEOUT)
    def deliver_on_schedule(db: object, args: dict[str, Any]) -> None:
        """The `deliver` job, retried on the schedule given."""
        deliver(db, args)

    @jobs.policy(backoff=backoff, retry_on=(OSError,), timeout=DELIVER_TIMEOUT)
    def write_on_schedule(db: object, args: dict[str, Any]) -> None:
        """The `write` job, retried on the schedule given."""
        write(db, args, writers or {})

    return {"deliver": deliver_on_schedule, **({"write": write_on_schedule} if writers else {})}


def performers_from_environment(writers: dict[str, Writer] | None = None) -> dict[str, Performer]:
    """The performers of the `mail` queue (with `writers`, as performers_for), on the schedule MAIL_RETRY_INTERVALS
    gives (ValueError when it is bad)."""
    return performers_for(os.environ.get("MAIL_RETRY_INTERVALS", ""), writers)
