"""An SMTP server in the spec's own process that keeps every letter the guestbook sends it.

The guestbook's worker hands each letter to it over real SMTP (aiosmtpd on a port
of its own); a spec waits for one with `inbox.wait_for(to=..., subject=...)`, which
wakes the moment that letter arrives, and opens `letter.link` as its reader would.
"""

import asyncio
import re
import threading
from dataclasses import dataclass
from datetime import datetime
from email import message_from_bytes
from email.policy import default

import pytest
from aiosmtpd.controller import Controller

from .local import HOST, free_port

WAIT = 5.0  # seconds a spec waits for a letter before it fails, listing the letters that did arrive
LINK = re.compile(r"https?://\S+")  # a link, which letters put on a line of its own


@dataclass(frozen=True)
class Letter:
    """A letter as it arrived: whom it was for, its subject, its Date and its text."""

    to: str
    subject: str
    date: datetime
    body: str

    @property
    def link(self) -> str:
        """The one link in the letter's text; a letter with none, or with several, fails the spec."""
        links = LINK.findall(self.body)
        if len(links) != 1:
            pytest.fail(f"the letter {self.subject!r} to {self.to} has {len(links)} links, not one:\n{self.body}")
        return links[0]


class Inbox:
    """An SMTP server on a free port that keeps the letters it receives; `url` is the MAIL_URL that names it.

    Its port is chosen when it is made, and it listens from `start()` on, so the
    guestbook can be told of it while it is still down. With `seconds_per_letter`
    it plays a slow mail server, taking that long to accept each letter.
    """

    def __init__(self, seconds_per_letter: float = 0.0):
        self.seconds_per_letter = seconds_per_letter
        self.port = free_port()
        self.url = f"smtp://{HOST}:{self.port}"
        self._letters: list[Letter] = []
        self._arrived = threading.Condition()
        self._controller = Controller(self, hostname=HOST, port=self.port)
        self._listening = False

    def start(self) -> "Inbox":
        """Starts listening; returns once the server answers."""
        self._controller.start()
        self._listening = True
        return self

    def stop(self) -> None:
        """Stops listening, if it was."""
        if self._listening:
            self._controller.stop()
            self._listening = False

    async def handle_DATA(self, server, session, envelope) -> str:
        """aiosmtpd's hook for each letter: keeps it, and wakes every spec waiting on the inbox."""
        if self.seconds_per_letter:
            await asyncio.sleep(self.seconds_per_letter)  # the slow mail server's own pace, not the spec's
        with self._arrived:
            self._letters.append(letter_of(envelope.content))
            self._arrived.notify_all()
        return "250 Message accepted for delivery"

    def letters(self, to: str | None = None, subject: str | None = None) -> list[Letter]:
        """The letters that have arrived, in the order they arrived; only those to `to` with `subject` when given."""
        with self._arrived:
            return [
                letter
                for letter in self._letters
                if (to is None or letter.to == to) and (subject is None or letter.subject == subject)
            ]

    def wait_for(self, *, to: str, subject: str, timeout: float = WAIT) -> Letter:
        """The first letter to `to` with `subject`, as soon as it arrives; fails the spec after `timeout` seconds."""
        with self._arrived:
            if self._arrived.wait_for(lambda: self.letters(to, subject), timeout):
                return self.letters(to, subject)[0]
            arrived = "\n".join(f"  to {letter.to}: {letter.subject}" for letter in self._letters) or "  none"
        pytest.fail(f"no letter to {to} with the subject {subject!r} came within {timeout} s; these did:\n{arrived}")


def letter_of(content: bytes) -> Letter:
    """The Letter that the raw message `content` holds."""
    message = message_from_bytes(content, policy=default)
    body = message.get_body(("plain",))
    assert body is not None, f"the letter {message['Subject']!r} has no plain-text part"
    return Letter(
        to=str(message["To"]),
        subject=str(message["Subject"]),
        date=message["Date"].datetime,
        body=body.get_content(),
    )
