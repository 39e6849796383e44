"""`delivered`: through a real SMTP server when MAIL_URL names one, to the outbox folder when not."""

import smtplib
from email import message_from_bytes
from email.policy import default

import pytest

import mail
from mail.transports import WORDS_LEFT_OUT, email_of

from .smtpd import Inbox, SMTPServer, body_of, free_port

LETTER = mail.message(
    "guestbook@example.com", "ada@example.com", "Confirm your account", "Open this:\n\nhttp://x.test/confirm/t\n"
)


def test_letter_goes_through_the_smtp_server_with_its_headers(smtp):
    mail.delivered(LETTER)

    (received,) = smtp.letters
    assert (received["From"], received["To"], received["Subject"]) == (
        "guestbook@example.com",
        "ada@example.com",
        "Confirm your account",
    )
    assert received["Message-ID"] == LETTER.message_id and received["Date"] == LETTER.date
    assert received.get_content_type() == "text/plain"
    assert "\nhttp://x.test/confirm/t\n" in body_of(received)


def test_a_sender_with_a_display_name_signs_the_letter_and_its_address_is_the_envelope_s(smtp):
    letter = mail.message("Guestbook <guestbook@example.com>", "ada@example.com", "Hello", "A body.\n")

    mail.delivered(letter)

    (received,) = smtp.letters
    assert (received["From"].addresses[0].display_name, smtp.senders) == ("Guestbook", ["guestbook@example.com"])
    assert letter.message_id.endswith("@example.com>")


def test_letter_with_accents_arrives_intact(smtp):
    mail.delivered(mail.message("guestbook@example.com", "zoe@example.com", "Bienvenue, Zoé", "Ça marche — merci.\n"))

    (received,) = smtp.letters
    assert received["Subject"] == "Bienvenue, Zoé" and body_of(received) == "Ça marche — merci.\n"


def test_unreachable_smtp_server_raises(monkeypatch):
    monkeypatch.setenv("MAIL_URL", f"smtp://127.0.0.1:{free_port()}")

    with pytest.raises(OSError):
        mail.delivered(LETTER)


def test_server_that_refuses_the_letter_raises(monkeypatch):
    class Refusing:
        async def handle_DATA(self, server, session, envelope):
            return "554 Transaction failed: not today"

    with SMTPServer() as server:
        server.controller.handler = Refusing()
        monkeypatch.setenv("MAIL_URL", server.url)
        with pytest.raises(smtplib.SMTPDataError, match="554"):
            mail.delivered(LETTER)


class QuotingFilter:
    """A content filter's SMTP handler: it refuses every letter with `code`, quoting its body as it came."""

    def __init__(self, code: str):
        self.code = code
        self.answers: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        body = envelope.original_content.split(b"\r\n\r\n", 1)[1]
        self.answers.append(f"{self.code} Refused by content filter: " + body.decode().replace("\r\n", " "))
        return self.answers[-1]


TOKEN = "eJwFwbERgDAMA8BdqClsrNhhFo7CStD-I_D_-HmstE2_h0j3KkghwMpUQoXSSIza1dMUnTO7A98CMS8tHu8PnPsTPQ"


@pytest.mark.parametrize(
    "body, encoding",
    [
        (f"Open this link:\n\nhttp://x.test/resets/{TOKEN}/edit\n", "quoted-printable"),
        (f"Ça — été à Noël, où ça ? Ça — été à Noël, où ça ?\n\nhttp://x.test/resets/{TOKEN}/edit\n", "base64"),
    ],
)
@pytest.mark.parametrize("code, status", [("554 5.7.1", b"5.7.1"), ("451 4.7.1", b"4.7.1"), ("554", b"")])
def test_a_server_answer_to_the_letter_is_kept_as_its_codes_without_its_words(
    monkeypatch, body, encoding, code, status
):
    letter = mail.message("guestbook@example.com", "ada@example.com", "Choose a new password", body)
    with SMTPServer() as server:
        server.controller.handler = content_filter = QuotingFilter(code)
        monkeypatch.setenv("MAIL_URL", server.url)
        with pytest.raises(smtplib.SMTPDataError) as refused:
            mail.delivered(letter)

    (answer,) = content_filter.answers
    assert f"Content-Transfer-Encoding: {encoding}" in email_of(letter).as_string()
    assert TOKEN not in answer, "the answer holds the token as the transfer encoding made it, which no search finds"
    error = refused.value
    assert (error.smtp_code, error.smtp_error) == (int(code[:3]), (status + b" " if status else b"") + WORDS_LEFT_OUT)
    assert error.__cause__ is None and error.__suppress_context__, "no traceback shows the server's words"


def test_a_letter_the_server_accepted_is_not_failed_by_its_answer_to_quit(monkeypatch):
    class QuitRefused(Inbox):
        async def handle_QUIT(self, server, session, envelope):
            return "421 4.3.0 closing, not saying bye"

    with SMTPServer() as server:
        server.controller.handler = handler = QuitRefused()
        monkeypatch.setenv("MAIL_URL", server.url)
        mail.delivered(LETTER)

    assert [received["Message-ID"] for received in handler.letters] == [LETTER.message_id]


def test_mail_url_with_an_unknown_scheme_is_refused(monkeypatch):
    monkeypatch.setenv("MAIL_URL", "http://127.0.0.1:25")

    with pytest.raises(ValueError, match="MAIL_URL takes smtp://host:port, "):
        mail.delivered(LETTER)


def test_refused_letter_is_not_sent(smtp):
    with pytest.raises(mail.Refused, match="has no subject"):
        mail.delivered(mail.message("guestbook@example.com", "ada@example.com", "", "body"))

    assert smtp.letters == []


def test_without_mail_url_the_letter_is_written_to_the_outbox(outbox):
    mail.delivered(LETTER)
    mail.delivered(LETTER)

    files = sorted(outbox.glob("*.eml"))
    assert len(files) == 2 and not list(outbox.glob(".*"))
    written = message_from_bytes(files[0].read_bytes(), policy=default)
    assert written["Message-ID"] == LETTER.message_id and "http://x.test/confirm/t" in body_of(written)


def test_outbox_letters_are_readable_by_their_owner_only(outbox):
    mail.delivered(LETTER)

    (path,) = outbox.glob("*.eml")
    assert path.stat().st_mode & 0o777 == 0o600


def test_outbox_defaults_to_a_folder_named_outbox(monkeypatch):
    monkeypatch.delenv("MAIL_OUTBOX", raising=False)

    assert str(mail.outbox_folder()) == "outbox"
