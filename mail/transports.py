"""Sending a letter now: the last step of its travel, run by the worker's `deliver` job.

MAIL_URL names the SMTP server: smtp://host:port, smtp+starttls://user:pass@host:587
or smtps://user:pass@host:465 (user and password percent-encoded). Without it,
letters are written as .eml files to the outbox folder, for a person running the
app on their own machine to read.

smtps:// is TLS from the first byte and smtp+starttls:// turns to TLS before anything
else, or fails; smtp:// turns to TLS whenever the server offers STARTTLS (as Rails'
enable_starttls_auto does), and otherwise goes in clear, so a password is never sent
on it without TLS (Unencrypted). TLS always checks the server's certificate.

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

from .letters import POLICY, Letter, Refused, refusal, sender_address

TIMEOUT = 10.0  # seconds any one exchange with the SMTP server may take before the attempt fails
OUTBOX_DEFAULT = "outbox"  # where letters go without MAIL_URL, unless MAIL_OUTBOX names a folder
OUTBOX_MODE = 0o600  # an outbox file's permissions: read and written by its owner only
PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}  # each scheme's port when the URL names none
STATUS = re.compile(rb"\s*([245]\.[0-9]{1,3}\.[0-9]{1,3})(?![^\s])")  # an enhanced status code ("5.7.1"), digits only
WORDS_LEFT_OUT = b"(the server's words are left out: having read the letter, they may quote it, links and all)"


class Unencrypted(smtplib.SMTPException):
    """The server offered no TLS on a MAIL_URL that holds a password, which is therefore never sent (nor the
    letter)."""


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
    """Hands `email` to the SMTP server `url` names, over TLS whenever it can (`encrypted`), once `handing_over()`
    returns.

    A password is sent over TLS only: without it, Unencrypted is raised before the
    password or the letter leaves. The envelope's addresses are `m`'s own (its sender's
    without the display name), never read back from the headers (which `refusal` has
    checked read back as the same).
    """
    parts = urlsplit(url)
    scheme, host, port = server_named(url)
    tls = ssl.create_default_context()
    server: smtplib.SMTP  # SMTP_SSL is an SMTP whose socket is TLS from the start
    if scheme == "smtps":
        server = smtplib.SMTP_SSL(host, port, timeout=TIMEOUT, context=tls)
    else:
        server = smtplib.SMTP(host, port, timeout=TIMEOUT)
    try:
        if not encrypted(server, scheme, tls) and parts.username:
            raise Unencrypted(
                f"the mail server at {host}:{port} offers no STARTTLS: the password MAIL_URL holds is never "
                "sent without TLS (name the server with smtp+starttls:// or smtps://)"
            )
        if parts.username:
            server.login(unquote(parts.username), unquote(parts.password or ""))
        server.ehlo_or_helo_if_needed()  # greeted, before the moment the letter may still be kept back
        handing_over()
        server.send_message(email, from_addr=sender_address(m.sender), to_addrs=[m.to])
    except smtplib.SMTPDataError as error:  # the answer to the letter: from None, so no traceback holds its words
        raise smtplib.SMTPDataError(error.smtp_code, unquoted(error.smtp_error)) from None
    finally:
        quitted(server)


def server_named(url: str) -> tuple[str, str, int]:
    """The scheme, host and port of the SMTP server MAIL_URL `url` names; a ValueError saying what it takes."""
    parts = urlsplit(url)
    try:
        port = parts.port or PORTS.get(parts.scheme, 0)
    except ValueError:  # urlsplit reads the port only when asked, and refuses one that is no number below 65536
        port = 0
    if parts.scheme not in PORTS or not parts.hostname or not port:
        raise ValueError(
            "MAIL_URL takes smtp://host:port, smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465, "
            f"got {redacted(url)!r}"
        )
    return parts.scheme, parts.hostname, port


def redacted(url: str) -> str:
    """MAIL_URL `url` without the password it may hold, for messages and the log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()


def encrypted(server: smtplib.SMTP, scheme: str, tls: ssl.SSLContext) -> bool:
    """Turns the connection to TLS where it can (smtp+starttls asks it; smtp:// when offered); whether it is TLS."""
    if scheme == "smtps":
        return True
    server.ehlo()
    if scheme == "smtp+starttls" or server.has_extn("starttls"):
        server.starttls(context=tls)  # raises when the server offers none: smtp+starttls:// asked for it
        return True
    return False


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
