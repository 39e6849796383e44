"""`delivered_later`: the letter waits as a job on the caller's transaction, and a worker sends it."""

import asyncio
import logging
import threading
import time

import pytest

import jobs
import mail
from tests.jobs.helpers import WAIT, wait_for

from .smtpd import Inbox, SMTPServer, free_port

LETTER = mail.message("guestbook@example.com", "ada@example.com", "Hello", "A body.\n")


def test_letter_is_queued_as_job_deliver_on_the_mail_queue(db):
    job_id = mail.delivered_later(db, LETTER)

    (job,) = jobs.listed(db)
    assert (job["id"], job["queue"], job["name"]) == (job_id, "mail", "deliver")
    assert job["args"]["to"] == "ada@example.com" and job["args"]["message_id"] == LETTER.message_id


def test_letter_queued_on_a_transaction_that_rolls_back_was_never_queued(db):
    with pytest.raises(RuntimeError):
        with db.transaction():
            mail.delivered_later(db, LETTER)
            raise RuntimeError("the request failed after queueing")

    assert jobs.listed(db) == []


def test_refused_letter_raises_and_queues_nothing(db):
    bad = mail.message("guestbook@example.com", "ada@example.com", "Hello\r\nBcc: all@example.com", "body")

    with pytest.raises(mail.Refused, match="subject holds a line break"):
        mail.delivered_later(db, bad)

    assert jobs.listed(db) == []


def test_worker_sends_the_queued_letter_with_its_message_id(db, smtp):
    mail.delivered_later(db, LETTER)

    assert jobs.worked(db, "mail", mail.performers) == "ran deliver"
    (received,) = smtp.letters
    assert received["Message-ID"] == LETTER.message_id
    assert jobs.listed(db) == []


def test_letter_that_fails_stays_queued_with_its_reason_and_is_sent_on_retry(db, monkeypatch):
    monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{free_port()}")  # nothing listens there
    mail.delivered_later(db, LETTER)

    said = jobs.worked(db, "mail", mail.performers)

    assert said.startswith("failed deliver on attempt 1:") and "refused" in said.lower()
    (job,) = jobs.listed(db)
    assert job["attempts"] == 1 and job["failure"]


def test_default_schedule_is_the_one_of_jobs():
    policy = mail.performers_for("")["deliver"].policy
    assert policy.attempts == jobs.ATTEMPTS
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [3, 18, 83, 258]


class RefusingInbox:
    """An SMTP handler that answers every recipient with `answer`."""

    def __init__(self, answer: str):
        self.answer = answer

    async def handle_RCPT(self, server, session, envelope, address, options):
        return self.answer


@pytest.mark.parametrize(
    "answer, attempts_left",
    [
        ("550 5.1.1 no such mailbox", False),
        ("451 4.3.0 try again later", True),
    ],
)
def test_a_permanent_refusal_fails_at_once_and_a_temporary_one_is_retried(db, monkeypatch, answer, attempts_left):
    from aiosmtpd.controller import Controller

    port = free_port()
    controller = Controller(RefusingInbox(answer), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{port}")
        mail.delivered_later(db, LETTER)
        said = jobs.worked(db, "mail", mail.performers)
    finally:
        controller.stop()
    assert said.startswith("failed deliver on attempt 1:") and answer.split()[0] in said
    (job,) = jobs.listed(db)
    assert (job["attempts"] < job["max_attempts"]) is attempts_left


def test_retry_intervals_set_the_schedule_and_the_number_of_attempts():
    deliver = mail.performers_for("1, 1, 2")["deliver"]

    assert deliver.policy.attempts == 4
    assert [deliver.policy.backoff(n) for n in (1, 2, 3, 4)] == [1.0, 1.0, 2.0, None]


def test_retry_intervals_that_are_not_numbers_are_refused():
    with pytest.raises(ValueError, match="MAIL_RETRY_INTERVALS takes seconds"):
        mail.performers_for("1,soon")


def test_with_a_short_schedule_a_letter_reaches_a_server_that_comes_back(db, connect, monkeypatch):
    from .smtpd import SMTPServer

    server = SMTPServer()
    monkeypatch.setenv("MAIL_URL", server.url)  # not started yet: the server is down
    performers = mail.performers_for("0,0,0")
    mail.delivered_later(db, LETTER)
    assert jobs.worked(db, "mail", performers).startswith("failed deliver on attempt 1")

    with server:
        assert jobs.worked(db, "mail", performers) == "ran deliver"
    assert [letter["To"] for letter in server.letters] == ["ada@example.com"]


def test_with_a_short_schedule_a_letter_fails_for_good_after_its_last_attempt(db, monkeypatch):
    monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{free_port()}")
    performers = mail.performers_for("0")
    mail.delivered_later(db, LETTER)

    said = [jobs.worked(db, "mail", performers) for _ in range(3)]

    assert said[0].startswith("failed deliver on attempt 1") and said[1].startswith("failed deliver on attempt 2")
    assert said[2] is None
    (job,) = jobs.listed(db)
    assert job["attempts"] == job["max_attempts"] == 2


def test_letter_past_its_lifetime_is_never_sent_however_late_it_is_retried(db, smtp, monkeypatch):
    monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{free_port()}")  # the server is down for now
    letter = mail.message(
        "guestbook@example.com", "ada@example.com", "Reset", "http://x.test/resets/t/edit\n", lifetime=3600
    )
    mail.delivered_later(db, letter)
    assert jobs.worked(db, "mail", mail.performers).startswith("failed deliver on attempt 1")
    # Days later the server is back, and the link in the letter died long ago.
    db.execute("UPDATE jobs SET args = jsonb_set(args, '{expires}', to_jsonb(%s::bigint))", [int(time.time()) - 86400])
    monkeypatch.setenv("MAIL_URL", smtp.url)

    said = jobs.worked(db, "mail", mail.performers, now=int(time.time() * 1000) + 3_600_000)

    assert said.startswith("failed deliver on attempt 2") and "expired" in said
    (shelved,) = jobs.failed(db, "mail")
    assert "the link it carries no longer works" in shelved["failure"]
    assert jobs.retried(db, every=True) == 1
    assert jobs.worked(db, "mail", mail.performers).startswith("failed deliver on attempt 1")
    assert smtp.letters == []


def test_letter_within_its_lifetime_is_sent_with_its_expiry_kept_in_the_job(db, smtp):
    before = time.time()
    mail.delivered_later(db, mail.message("guestbook@example.com", "ada@example.com", "Hi", "body", lifetime=60))

    (job,) = jobs.listed(db)
    assert before + 60 <= job["args"]["expires"] <= time.time() + 61
    assert jobs.worked(db, "mail", mail.performers) == "ran deliver"
    assert len(smtp.letters) == 1


def test_letter_that_expired_before_it_was_queued_is_refused_and_queues_nothing(db):
    with pytest.raises(mail.Refused, match="expired"):
        mail.delivered_later(db, mail.message("guestbook@example.com", "ada@example.com", "Hi", "body", lifetime=-1))

    assert jobs.listed(db) == []


class HoldingInbox(Inbox):
    """An SMTP handler that holds each exchange at `step` ("EHLO" or "DATA") until `go` is set; `held` says it is there.

    At DATA the server is reading the letter, handed over already: a slow relay, or a
    content filter at work. At EHLO the letter has not left yet.
    """

    def __init__(self, step: str):
        super().__init__()
        self.step, self.held, self.go = step, threading.Event(), threading.Event()

    async def waited(self, step: str) -> None:
        if step == self.step and not self.go.is_set():
            self.held.set()
            await asyncio.get_running_loop().run_in_executor(None, self.go.wait)

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        await self.waited("EHLO")
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        await self.waited("DATA")
        return await super().handle_DATA(server, session, envelope)


def cancelled_in(step: str, db, connect, monkeypatch, caplog) -> tuple[int, HoldingInbox]:
    """Queues LETTER, cancels it while a worker's exchange with the mail server is held at `step`, then retries it
    from the shelf as an operator would; answers the job's id and the inbox once the worker has nothing left to do."""
    inbox = HoldingInbox(step)
    with SMTPServer() as server, caplog.at_level(logging.INFO, logger="jobs"):
        server.controller.handler = inbox
        monkeypatch.setenv("MAIL_URL", server.url)
        job = mail.delivered_later(db, LETTER)
        worker = jobs.Worker(connect, mail.QUEUE, mail.performers, poll=0.1).start()
        try:
            assert inbox.held.wait(WAIT), f"the letter never reached {step}"
            assert jobs.cancelled(db, job).signalled == [job]
            heard = f"job {job} (deliver on mail) was cancelled"
            wait_for(lambda: heard in caplog.text, "the worker to hear the cancel")
            inbox.go.set()
            wait_for(lambda: not held(db, job), "the letter's attempt to end")
            jobs.retried(db, job)  # the operator's Retry on the failed shelf
            wait_for(lambda: jobs.listed(db) == [], "the mail queue to empty")
        finally:
            worker.stop()
            worker.join(WAIT)
    return job, inbox


def held(db, job: int) -> bool:
    """Whether a worker holds job `job` now."""
    return db.execute("SELECT FROM jobs WHERE id = %s AND claim IS NOT NULL", [job]).fetchone() is not None


def test_a_letter_cancelled_while_the_mail_server_reads_it_is_sent_once_and_no_retry_sends_it_again(
    db, connect, monkeypatch, caplog
):
    job, inbox = cancelled_in("DATA", db, connect, monkeypatch, caplog)

    assert [letter["Message-ID"] for letter in inbox.letters] == [LETTER.message_id]
    assert "was cancelled past its point of no return" in caplog.text


def test_a_letter_cancelled_before_it_is_handed_over_is_kept_back_and_sent_once_by_a_retry(
    db, connect, monkeypatch, caplog
):
    job, inbox = cancelled_in("EHLO", db, connect, monkeypatch, caplog)

    stopped = f"job {job} (deliver on mail) was cancelled: its writes are undone"
    assert stopped in caplog.text, "the first attempt stopped before the letter went"
    assert [letter["Message-ID"] for letter in inbox.letters] == [LETTER.message_id], "only the retry sent it"


class SlowToAnswer(Inbox):
    """An SMTP handler that keeps each letter at once, and answers `late` seconds after."""

    def __init__(self, late: float):
        super().__init__()
        self.late = late

    async def handle_DATA(self, server, session, envelope):
        answer = await super().handle_DATA(server, session, envelope)
        await asyncio.sleep(self.late)
        return answer


def test_a_letter_whose_server_times_out_once_it_has_the_letter_is_not_sent_again(db, monkeypatch):
    """The answer to the letter comes after the client's timeout: the server may have it, so no retry sends it."""
    from aiosmtpd.controller import Controller

    monkeypatch.setattr(mail.transports, "TIMEOUT", 0.3)  # seconds the client waits for each answer
    inbox, port = SlowToAnswer(1.0), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{port}")
        job = mail.delivered_later(db, LETTER)
        first = jobs.worked(db, "mail", mail.performers_for("0,0"))
        again = jobs.worked(db, "mail", mail.performers_for("0,0"))
    finally:
        controller.stop()
    assert (again, len(inbox.letters)) == (None, 1), "a retry would hand the letter over again"
    assert first.startswith("failed deliver on attempt 1: the mail server was handed the letter")
    assert [shelved["id"] for shelved in jobs.failed(db)] == [job]
