"""`written_later`: only what a letter is written from waits in the queue; the worker writes it, link and all,
when it leaves."""

import pytest

import jobs
import mail

LIFETIME = 3600  # seconds the link of the test's letter lives


class Writers:
    """The writers of one kind of letter, "hello", that count when they are called."""

    def __init__(self):
        self.written: list[mail.Letter] = []

    def hello(self, db, args) -> mail.Letter | None:
        if args["to"] is None:
            return None
        letter = mail.message("guestbook@example.com", args["to"], "Hello", "A link.\n", lifetime=LIFETIME)
        self.written.append(letter)
        return letter

    def performers(self) -> dict[str, mail.Performer]:
        return mail.performers_for("", writers={"hello": self.hello})


@pytest.fixture
def writers():
    return Writers()


def test_the_letter_is_written_when_its_job_runs_not_when_it_is_queued(db, smtp, writers):
    job_id = mail.written_later(db, "hello", {"to": "ada@example.com"}, priority=-1)

    (job,) = jobs.listed(db)
    assert (job["id"], job["name"], job["priority"]) == (job_id, "write", -1)
    assert job["args"] == {"kind": "hello", "to": "ada@example.com"}  # nothing written yet
    assert writers.written == []
    assert jobs.worked(db, "mail", writers.performers()) == "ran write"
    (letter,) = writers.written
    (received,) = smtp.letters
    assert received["Message-ID"] == letter.message_id and received["To"] == "ada@example.com"
    assert jobs.listed(db) == []


def test_a_writer_with_nothing_to_send_ends_the_job_without_a_letter(db, smtp, writers):
    mail.written_later(db, "hello", {"to": None})

    assert jobs.worked(db, "mail", writers.performers()) == "ran write"
    assert smtp.letters == [] and jobs.listed(db) == []


def test_asking_again_while_the_letter_waits_is_the_same_letter(db, writers, smtp):
    first = mail.written_later(db, "hello", {"to": "ada@example.com"}, unique="hello:ada")

    assert mail.written_later(db, "hello", {"to": "ada@example.com"}, unique="hello:ada") is None
    assert [job["id"] for job in jobs.listed(db)] == [first]
    assert jobs.worked(db, "mail", writers.performers()) == "ran write"
    assert mail.written_later(db, "hello", {"to": "ada@example.com"}, unique="hello:ada") is not None  # it went


def test_a_kind_no_writer_knows_fails_for_good_naming_it(db, writers):
    mail.written_later(db, "goodbye", {"to": "ada@example.com"})

    said = jobs.worked(db, "mail", writers.performers())

    assert said.startswith("failed write") and "no writer knows letters of kind 'goodbye'" in said
    assert [job["attempts"] for job in jobs.failed(db, "mail")] == [1]  # on the shelf after one attempt


@pytest.mark.parametrize("kind", ["", None, 3])
def test_a_kind_that_is_no_name_is_refused_and_queues_nothing(db, kind):
    with pytest.raises(ValueError, match="written_later takes the kind of letter as a name"):
        mail.written_later(db, kind, {"to": "ada@example.com"})

    assert jobs.listed(db) == []


def test_without_writers_the_mail_queue_runs_no_write_job():
    assert set(mail.performers_for("")) == {"deliver"}
