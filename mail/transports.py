"""Sending a letter now: the last step of its travel, run by the worker's `deliver` job.

MAIL_URL names the SMTP server: smtp://host:port, smtp+starttls://user:pass@host:587
or smtps://user:pass@host:465 (user and password percent-encoded). Without it,
letters are written as .eml files to the outbox folder, for a person running the
app on their own machine to read.

A mail server's answer to the letter itself comes after it has read the letter, and
a content filter's may quote it: its lines as they went, links cut into pieces by the
transfer encoding (quoted-printable, base64), which no search for the link's text
finds again. So that answer leaves `sent` as its codes only (`unquoted`), and the
reason a failed attempt keeps can never carry the letter's text.
"""

import os
import re
import secrets
import smtplib
import ssl
import time
from collections.abc import Callable
from email.message import EmailMessage
from email.policy import default
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .letters import POLICY, Letter, Refused, refusal

TIMEOUT = 10.0  # seconds any one exchange with the SMTP server may take before the attempt fails
OUTBOX_DEFAULT = "outbox"  # where letters go without MAIL_URL, unless MAIL_OUTBOX names a folder
OUTBOX_MODE = 0o600  # an outbox file's permissions: read and written by its owner only
PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}  # each scheme's port when the URL names none
STATUS = re.compile(rb"\s*([245]\.[0-9]{1,3}\.[0-9]{1,3})(?![^\s])")  # an enhanced status code ("5.7.1"), digits only
WORDS_LEFT_OUT = b"(the server's words are left out: having read the letter, they may quote it, links and all)"


def delivered(m: Letter, handing_over: Callable[[], object] = lambda: None) -> None:
    """Sends `m` through MAIL_URL's server, or writes it to the outbox without one.

    `handing_over()` is called at the last moment the letter can still be kept back:
    connected and signed in to the server, just before the letter goes (or is written).
    What it raises keeps the letter back. Raises Refused for a letter `refusal` refuses,
    and whatever smtplib or the file system raise when sending fails (the worker
    records it and tries again later).
    """
    reason = refusal(m)
    if reason:
        raise Refused(reason)
    url = os.environ.get("MAIL_URL", "")
    if url:
        sent(email_of(m), url, m, handing_over)
    else:
        handing_over()
        written(email_of(m), outbox_folder())


def email_of(m: Letter) -> EmailMessage:
    """The letter as a MIME message: text/plain in UTF-8 with its five headers."""
    email = EmailMessage(policy=POLICY)
    email["From"] = m.sender
    email["To"] = m.to
    email["Subject"] = m.subject
    email["Date"] = m.date
    email["Message-ID"] = m.message_id
    email.set_content(m.body)
    return email


def sent(email: EmailMessage, url: str, m: Letter, handing_over: Callable[[], object]) -> None:
    """Hands `email` to the SMTP server `url` names (TLS when the scheme asks for it) once `handing_over()` returns.

    The envelope's addresses are `m`'s own, never read back from the headers (which
    `refusal` has checked read back as the same).
    """
    parts = urlsplit(url)
    if parts.scheme not in PORTS or not parts.hostname:
        raise ValueError(
            f"MAIL_URL must look like smtp://host:port, smtp+starttls://... or smtps://..., got scheme {parts.scheme!r}"
        )
    port = parts.port or PORTS[parts.scheme]
    tls = ssl.create_default_context()
    server: smtplib.SMTP  # SMTP_SSL is an SMTP whose socket is TLS from the start
    if parts.scheme == "smtps":
        server = smtplib.SMTP_SSL(parts.hostname, port, timeout=TIMEOUT, context=tls)
    else:
        server = smtplib.SMTP(parts.hostname, port, timeout=TIMEOUT)
    try:
        if parts.scheme == "smtp+starttls":
            server.starttls(context=tls)
        if parts.username:
            server.login(unquote(parts.username), unquote(parts.password or ""))
        server.ehlo_or_helo_if_needed()  # greeted, before the moment the letter may still be kept back
        handing_over()
        server.send_message(email, from_addr=m.sender, to_addrs=[m.to])
    except smtplib.SMTPDataError as error:  # the answer to the letter: from None, so no traceback holds its words
        raise smtplib.SMTPDataError(error.smtp_code, unquoted(error.smtp_error)) from None
    finally:
        quitted(server)


def unquoted(answer: bytes | str) -> bytes:
    """A server's answer to a letter, as `sent` keeps it: its enhanced status code (STATUS), then WORDS_LEFT_OUT.

    The words go, whatever they say: a filter may quote any piece of the letter, in any
    encoding, and no test of the words can tell its quote from its own. The code says
    what an operator needs (5.7.1: refused by policy); the server's log has the rest.
    """
    found = STATUS.match(answer.encode("ascii", "replace") if isinstance(answer, str) else answer)
    return (found.group(1) + b" " if found else b"") + WORDS_LEFT_OUT


def quitted(server: smtplib.SMTP) -> None:
    """Says QUIT and closes the connection, whatever the server answers to it.

    The letter was accepted or refused before: a QUIT that fails changes neither, and
    raising for it would fail, and so send again, a letter the server has accepted.
    """
    try:
        server.quit()
    except OSError:  # smtplib's errors are OSErrors; the connection is closed all the same
        server.close()


def outbox_folder() -> Path:
    """The folder letters are written to when MAIL_URL is not set."""
    return Path(os.environ.get("MAIL_OUTBOX") or OUTBOX_DEFAULT)


def written(email: EmailMessage, folder: Path) -> Path:
    """Writes `email` to `folder` as a new .eml file named to sort oldest first; returns its path.

    The file appears whole or not at all (written aside, then renamed), so a reader
    of the outbox never finds half a letter. Only its owner may read it (OUTBOX_MODE):
    its links sign in as the account they were sent to.
    """
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns()}-{secrets.token_hex(4)}"
    aside = folder / f".{name}.partial"
    with open(os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OUTBOX_MODE), "wb") as file:
        file.write(email.as_bytes(policy=default))  # LF line ends, as local files have
    return aside.replace(folder / f"{name}.eml")
