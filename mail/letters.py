"""What a letter is, and which letters are refused before anyone tries to send them.

A letter is made once, by `message`, with its Message-ID and Date already chosen, so
a letter that is queued and sent three attempts later still carries the same ones
(a mail server that received the first attempt can tell the second is a copy). A
letter whose link dies carries the same lifetime: past it, the letter is refused.
"""

import math
import os
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, getaddresses, make_msgid

BODY_MAX = 100_000  # characters a letter's body may hold
ADDRESS_MAX = 254  # characters an address may hold (RFC 5321's limit on a path, less its brackets)
BASE_URL_DEFAULT = "http://127.0.0.1:5000"  # where links point when BASE_URL is not set

# A plain address, local@domain: printable ASCII without spaces, no display name,
# nothing SMTP would read as syntax. It is deliberately stricter than RFC 5322 allows.
ADDRESS = re.compile(r"[!-?A-~]+@[!-?A-~]+")  # printable ASCII from "!" to "~", but for "@" (between "?" and "A")
NOT_IN_ADDRESS = set('<>()[],;:\\"')  # characters a header would read as syntax around the address
ENCODED_WORD = "=?"  # how an RFC 2047 encoded-word begins: a reader decodes it into other characters
HEADER_BREAKERS = ("\r", "\n", "\x00")  # characters that would end a header or the string
POLICY = SMTP  # how a letter's headers are written (transports.email_of) and read back here


class Refused(ValueError):
    """A letter that `delivered` would refuse; the message says why."""


@dataclass(frozen=True)
class Letter:
    """A plain-text letter, as the `deliver` job carries it in its arguments."""

    sender: str  # an address, or a display name and an address: Guestbook <guestbook@example.com>
    to: str  # an address only
    subject: str
    body: str
    message_id: str
    date: str
    expires: int | None = None  # seconds since the epoch from which it is never sent (its link has died); None: never


def message(sender: str, to: str, subject: str, body: str, *, lifetime: int | None = None) -> Letter:
    """A letter from `sender` to `to`, with a new Message-ID and the Date of now.

    A letter whose body carries a link that dies gets that link's `lifetime` (in
    seconds): once it has passed, `refusal` refuses the letter, so no retry, however
    late, sends a link that no longer works.
    """
    domain = sender_address(sender).rpartition("@")[2] or "localhost"
    # Rounded up, so the letter dies no later than a link made this second: its signed
    # timestamp is whole seconds, rounded down, and it dies past lifetime from there.
    expires = math.ceil(time.time()) + lifetime if lifetime is not None else None
    return Letter(sender, to, subject, body, make_msgid(domain=domain), format_datetime(datetime.now(UTC)), expires)


def is_address(text: str) -> bool:
    """Whether `text` is one plain address (local@domain) of at most ADDRESS_MAX characters, sent as it reads.

    Printable ASCII only, with no RFC 2047 encoded-word: a header holding
    "=?utf-8?q?victim?=@=?utf-8?q?evil=2Eexample?=" is read as victim@evil.example,
    so an account could name one mailbox and its letters reach another. What is
    left must also come back unchanged from a header written as the sender writes it.
    """
    if not isinstance(text, str) or len(text) > ADDRESS_MAX or ADDRESS.fullmatch(text) is None:
        return False
    if ENCODED_WORD in text or NOT_IN_ADDRESS.intersection(text):
        return False
    return read_back(text) == [text]


def sender_address(sender: str) -> str:
    """The address of a letter's `sender`, written `address` or `Name <address>`; "" when it is neither.

    The display name is the operator's (MAIL_FROM) and shows in the From header; the
    address alone is the envelope's sender, and must be one `is_address` takes.
    """
    found = read_back(sender)
    return found[0] if len(found) == 1 and is_address(found[0]) else ""


def read_back(address: str) -> list[str]:
    """The addresses a To header holding `address` names, as a mail server and a reader take them.

    The header is written with POLICY, as transports.email_of writes it, and read
    with getaddresses, as smtplib reads headers to address a letter. A header the
    parser finds anything wrong with (a defect) names no address.
    """
    email = EmailMessage(policy=POLICY)
    try:
        email["To"] = address
    except (ValueError, TypeError):  # the parser refuses, e.g. an encoded line break
        return []
    if email["To"].defects:
        return []
    return [found for _, found in getaddresses([str(email["To"])])]


def refusal(m: Letter) -> str:
    """Why `m` would be refused, in a sentence naming the field; "" when it would not."""
    for field in ("sender", "to", "subject", "message_id", "date"):
        value = getattr(m, field)
        if not isinstance(value, str):
            return f"the letter's {field} is not text"
        if any(c in value for c in HEADER_BREAKERS):
            return f"the letter's {field} holds a line break or a NUL character"
    if not sender_address(m.sender):
        return f"the letter's sender is not an address, with a display name or without: {m.sender!r}"
    if not is_address(m.to):
        return f"the letter's to is not an address: {m.to!r}"
    if not m.subject.strip():
        return "the letter has no subject"
    if not isinstance(m.body, str) or "\x00" in m.body:
        return "the letter's body is not text without NUL characters"
    if len(m.body) > BODY_MAX:
        return f"the letter's body holds {len(m.body)} characters, more than BODY_MAX ({BODY_MAX})"
    if m.expires is not None and (not isinstance(m.expires, int) or isinstance(m.expires, bool)):
        return f"the letter's expires is not whole seconds since the epoch: {m.expires!r}"
    if m.expires is not None and time.time() >= m.expires:
        when = datetime.fromtimestamp(m.expires, UTC).isoformat(timespec="seconds")
        return f"the letter expired at {when}: the link it carries no longer works"
    return ""


def url_for(path: str) -> str:
    """The absolute address of `path` (which starts with "/") on the site BASE_URL names.

    Links in letters come from configuration, never from the request's Host header,
    which whoever sends the request chooses.
    """
    if not path.startswith("/"):
        raise ValueError(f"url_for takes a path that starts with '/', got {path!r}")
    return os.environ.get("BASE_URL", BASE_URL_DEFAULT).rstrip("/") + path
