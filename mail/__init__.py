"""Letters, and the ways they leave: at once (`delivered`) or later, by a job (`delivered_later`).

How a letter travels, file by file:
  letters.py     `message` builds a letter; `refusal` says why one would be refused;
                 `url_for` makes the absolute links letters carry.
  later.py       `delivered_later` queues the letter as job `deliver` on the `mail`
                 queue, on the caller's transaction; `performers` is what a worker
                 on that queue runs.
  transports.py  `delivered` sends it through the SMTP server MAIL_URL names, or
                 writes it to the outbox folder when there is none.

It needs the standard library and `jobs` only, so it can be copied into an app.
"""

from .later import QUEUE, Undeliverable, delivered_later, performers, performers_for
from .letters import BODY_MAX, Letter, Refused, is_address, message, refusal, url_for
from .transports import TIMEOUT, delivered, outbox_folder

__all__ = [
    "BODY_MAX", "QUEUE", "TIMEOUT", "Letter", "Refused", "Undeliverable", "delivered", "delivered_later", "is_address",
    "message", "outbox_folder", "performers", "performers_for", "refusal", "url_for",
]
