"""The outbox, for a person running the guestbook on their own machine (development only).

With no MAIL_URL, the worker writes each letter it sends to the outbox folder as
an .eml file; this page shows them, newest first, with their links clickable, so
that confirming, unlocking and resetting can be tried without a mail server. The
page shows only under development's printed link (development.py), and its links to
this site lead under that link too (`keyed`), so the pages they open keep the header's
Outbox and Jobs; the letters themselves hold the plain links, and no key.
"""

import re
from email import message_from_bytes
from email.policy import default

from flask import Blueprint, render_template, request

import mail

bp = Blueprint("outbox", __name__)

SHOWN = 50  # letters the page shows, the newest
LINK = re.compile(r"(https?://\S+)")


@bp.route("/outbox")
def index():
    """The newest letters of the outbox."""
    paths = sorted(mail.outbox_folder().glob("*.eml"), reverse=True)[:SHOWN]
    return render_template("outbox/index.html", letters=[read(path) for path in paths])


def read(path) -> dict:
    """A letter file's headers, and its body cut into (text, href) pieces: href is None for text, else a link's."""
    letter = message_from_bytes(path.read_bytes(), policy=default)
    body = letter.get_body(("plain",))
    text = body.get_content() if body is not None else ""
    return {
        "sender": letter["From"],
        "to": letter["To"],
        "subject": letter["Subject"],
        "date": letter["Date"],
        # LINK.split puts the links at the odd places
        "pieces": [(piece, keyed(piece) if index % 2 else None) for index, piece in enumerate(LINK.split(text))],
    }


def keyed(link: str) -> str:
    """`link` under the address this page was opened at (the printed link's /KEY), when it leads to this site."""
    site = mail.url_for("/")
    if not link.startswith(site):
        return link
    return site.rstrip("/") + request.script_root + "/" + link.removeprefix(site)
