"""Letters, and the ways they leave: at once (`delivered`) or later, by a job (`delivered_later`).

How a letter travels, file by file:
  letters.py     `message` builds a letter; `refusal` says why one would be refused;
                 `url_for` makes the absolute links letters carry.
  later.py       `delivered_later` queues the letter as job `deliver` on the `mail`
                 queue, on the caller's transaction; `written_later` queues job `write`,
                 whose letter (and link) is written when it leaves, by the app's `Writer`
                 of its kind; `mail.performers` (made from MAIL_RETRY_INTERVALS when
                 asked for) is what a worker on that queue runs.
  transports.py  `delivered` sends it through the SMTP server MAIL_URL names, or
                 writes it to the outbox folder when there is none.

It needs the standard library and `jobs` (with its psycopg) only, so it can be copied into an app.
"""

from .later import (
    QUEUE,
    Performer,
    Unconfirmed,
    Undeliverable,
    Writer,
    delivered_later,
    performers_for,
    performers_from_environment,
    written_later,
)
from .letters import BODY_MAX, Letter, Refused, is_address, message, refusal, url_for
from .transports import TIMEOUT, Unencrypted, delivered, outbox_folder, server_named


def __getattr__(name: str) -> dict[str, Performer]:
    """`mail.performers`, made when asked for (as `jobs work --performers mail:performers` does).

    It is made from MAIL_RETRY_INTERVALS then, not when `mail` is imported, so a bad
    value is a ValueError for whoever asks (`guestbook serve` says so and exits 2),
    and importing the app never fails because of it.
    """
    if name == "performers":
        return performers_from_environment()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BODY_MAX",
    "QUEUE",
    "TIMEOUT",
    "Letter",
    "Performer",
    "Refused",
    "Unconfirmed",
    "Undeliverable",
    "Unencrypted",
    "Writer",
    "delivered",
    "delivered_later",
    "is_address",
    "message",
    "outbox_folder",
    "performers",
    "performers_for",
    "performers_from_environment",
    "refusal",
    "server_named",
    "url_for",
    "written_later",
]
