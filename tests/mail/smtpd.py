"""A real SMTP server in the test process (aiosmtpd), that keeps the letters it receives.

Used by the mail and guestbook tests, and by the sign-up benchmark, which gives it
a delay to play a slow mail server.
"""

import asyncio
import socket
import threading
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default

from aiosmtpd.controller import Controller

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on now (aiosmtpd needs a real one: port 0 will not do)."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Inbox:
    """The aiosmtpd handler: keeps every letter, after waiting `delay` seconds on each."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.letters: list[EmailMessage] = []
        self.senders: list[str] = []  # each letter's envelope sender (MAIL FROM), in the letters' order
        self.arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            await asyncio.sleep(self.delay)
        with self.arrived:
            self.letters.append(message_from_bytes(envelope.content, policy=default))
            self.senders.append(envelope.mail_from)
            self.arrived.notify_all()
        return "250 Message accepted for delivery"


class SMTPServer:
    """An SMTP server on a free port of 127.0.0.1; `url` is its MAIL_URL."""

    def __init__(self, delay: float = 0.0, **controller_options):
        self.inbox = Inbox(delay)
        self.port = free_port()
        self.controller = Controller(self.inbox, hostname=HOST, port=self.port, **controller_options)
        self.url = f"smtp://{HOST}:{self.port}"

    @property
    def letters(self) -> list[EmailMessage]:
        return self.inbox.letters

    @property
    def senders(self) -> list[str]:
        return self.inbox.senders

    def __enter__(self) -> "SMTPServer":
        self.controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self.controller.stop()


def body_of(letter: EmailMessage) -> str:
    """The plain-text body of a received letter, with the wire's CRLF line ends made LF."""
    body = letter.get_body(("plain",))
    assert body is not None, f"the letter {letter['Subject']!r} has no plain-text part"
    return body.get_content().replace("\r\n", "\n")
