"""Every setting `guestbook serve` and `guestbook work` read, checked in one place before either starts.

READERS holds one reader a setting: given the environment's text ("" when unset) and
whether production's rules apply, it returns the value the process uses, or raises a
ValueError whose sentence names the setting and what it takes (as Django's system checks
do). `checked` runs every reader at the start of `serve` and `work` and gathers every problem;
create_app and the upkeep read their settings with `read`. The mail package reads its
own (MAIL_URL, MAIL_OUTBOX, MAIL_RETRY_INTERVALS, BASE_URL) where it uses them, with
the same functions these readers call, so what passes here works there.
"""

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from psycopg.conninfo import conninfo_to_dict

import mail

from . import mailer, proxies, server, tokens

SECRET_KEY_MIN = 32  # characters a SECRET_KEY needs in production (a random one: `openssl rand -hex 32`)
MAIL_FROM_DEFAULT = "guestbook@localhost"  # the sender of every letter unless MAIL_FROM says otherwise
TRUSTED_PROXIES_DEFAULT = ""  # the proxies unless TRUSTED_PROXIES names some: none, the client is who connects
PORT_MAX = 65535  # the highest TCP port
WORKER_BESIDE_VALUES = {"": True, "1": True, "0": False}  # what WORKER_BESIDE takes, and what each says
PROBE_TO = "reader@example.com"  # the address a letter from MAIL_FROM is tried on, to see whether letters take it
RETIRED = {  # settings that no longer do what they did: serve refuses to start while one is set
    "ADMIN_EMAILS": "ADMIN_EMAILS no longer grants the dashboard to an address: grant it to a confirmed account "
    "with `python -m guestbook admins add ADDRESS`, and unset ADMIN_EMAILS",
}
MAIL_SCHEMES = (
    "smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465 "
    "(or smtp://host:25 for a relay that takes letters without a password)"
)


class Invalid(ValueError):
    """Settings `serve` cannot use; `problems` holds one sentence for each."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def checked(environ: Mapping[str, str], production: bool) -> dict:
    """Every setting READERS knows, read from `environ`; Invalid with every problem found, when there are any."""
    values, problems = {}, []
    for name, reader in READERS.items():
        try:
            values[name] = reader(environ.get(name, ""), production)
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise Invalid(problems)
    return values


def read(*names: str) -> dict:
    """The settings `names` from the environment, without production's rules (serve has checked those)."""
    return {name: READERS[name](os.environ.get(name, ""), False) for name in names}


def secret_key(text: str, production: bool) -> str | None:
    """SECRET_KEY: SECRET_KEY_MIN characters or more in production; None when unset (development keeps one)."""
    if production and not text:
        raise ValueError("set SECRET_KEY (`openssl rand -hex 32` makes one), or run with --development")
    if production and len(text) < SECRET_KEY_MIN:
        raise ValueError(f"SECRET_KEY has {len(text)} characters; it needs {SECRET_KEY_MIN} or more, random")
    return text or None


def database_url(text: str, production: bool) -> str | None:
    """DATABASE_URL: a PostgreSQL URL or connection string, required in production; None when unset."""
    if production and not text:
        raise ValueError("set DATABASE_URL to the guestbook's PostgreSQL, or run with --development")
    try:
        conninfo_to_dict(text)
    except Exception:  # psycopg's own error quotes the text, which may hold the password
        raise ValueError(
            "DATABASE_URL takes a PostgreSQL URL (postgresql://user:pass@host:5432/name) or a connection "
            "string (host=... dbname=...)"
        ) from None
    return text or None


def mail_url(text: str, production: bool) -> str:
    """MAIL_URL: an SMTP server whose password, when it holds one, goes over TLS only; required in production."""
    if not text:
        if production:
            raise ValueError(f"set MAIL_URL to the SMTP server that sends the letters: {MAIL_SCHEMES}")
        return ""
    scheme, _, _ = mail.server_named(text)
    if scheme == "smtp" and urlsplit(text).username:
        raise ValueError(
            "MAIL_URL holds a password on smtp://, which would go in clear to a server that offers no STARTTLS: "
            "use smtp+starttls://user:pass@host:587 or smtps://user:pass@host:465"
        )
    return text


def mail_from(text: str, production: bool) -> str:
    """MAIL_FROM: a sender every letter takes, an address with a display name or without."""
    sender = text.strip() or MAIL_FROM_DEFAULT
    reason = mail.refusal(mail.message(sender, PROBE_TO, "A letter", "Its body.\n"))
    if reason:
        raise ValueError(
            f"MAIL_FROM takes an address, with a display name or without (Guestbook <guestbook@example.com>): {reason}"
        )
    return sender


def base_url(text: str, production: bool) -> str | None:
    """BASE_URL: the site's address, https:// in production; None when unset (development's own address)."""
    parts = urlsplit(text.strip())
    if production and (parts.scheme != "https" or not parts.hostname):
        raise ValueError(
            f"set BASE_URL to the site's https:// address (the links in letters point there), not {text!r}"
        )
    if text and (parts.scheme not in ("http", "https") or not parts.hostname):
        raise ValueError(f"BASE_URL takes the site's address, as http://127.0.0.1:5000, not {text!r}")
    return text.strip() or None


def mail_outbox(text: str, production: bool) -> Path:
    """MAIL_OUTBOX: the outbox folder, where development writes its letters; anything but a file."""
    folder = Path(text.strip() or mail.transports.OUTBOX_DEFAULT)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"MAIL_OUTBOX takes a folder, and {str(folder)!r} is a file")
    return folder


def retry_intervals(text: str, production: bool) -> str:
    """MAIL_RETRY_INTERVALS: seconds between a letter's attempts, as mail.performers_for reads them."""
    mail.performers_for(text)
    return text


def worker_beside(text: str, production: bool) -> bool:
    """WORKER_BESIDE: 1 (the default) runs the mail worker inside `serve`, 0 leaves it to `guestbook work`."""
    if text.strip() not in WORKER_BESIDE_VALUES:
        raise ValueError(
            "WORKER_BESIDE (or --no-worker) takes 1 (a mail worker beside the server) or 0 (none: "
            f"`guestbook work` sends the letters), got {text.strip()!r}"
        )
    return WORKER_BESIDE_VALUES[text.strip()]


def port(text: str, production: bool) -> int:
    """PORT: a TCP port, server.DEFAULT_PORT when unset."""
    number = whole_number("PORT (or --port)", text, server.DEFAULT_PORT)
    if not 1 <= number <= PORT_MAX:
        raise ValueError(f"PORT (or --port) takes a TCP port, 1 to {PORT_MAX}, got {text.strip()!r}")
    return number


def counted(name: str, default: int, least: int) -> Callable[[str, bool], int]:
    """A reader of the whole number `name`, `least` or more, `default` when unset."""

    def reader(text: str, production: bool) -> int:
        number = whole_number(name, text, default)
        if number < least:
            raise ValueError(f"{name} takes a whole number, {least} or more, got {text.strip()!r}")
        return number

    return reader


def whole_number(name: str, text: str, default: int) -> int:
    """`text`, the setting `name`, as a whole number, `default` when blank; a ValueError naming it otherwise."""
    text = text.strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"{name} takes a whole number, got {text!r}")
    return int(text)


def retired(name: str) -> Callable[[str, bool], None]:
    """A reader that refuses the setting `name` whenever it is set, saying what to do instead (RETIRED)."""

    def reader(text: str, production: bool) -> None:
        if text:
            raise ValueError(RETIRED[name])

    return reader


READERS: dict[str, Callable[[str, bool], object]] = {  # docs/operations.md's table, in its order
    "DATABASE_URL": database_url,
    "SECRET_KEY": secret_key,
    "MAIL_URL": mail_url,
    "MAIL_FROM": mail_from,
    "BASE_URL": base_url,
    "HOST": lambda text, production: server.host(text, not production),
    "PORT": port,
    "WORKER_BESIDE": worker_beside,
    "MAIL_OUTBOX": mail_outbox,
    "MAIL_RETRY_INTERVALS": retry_intervals,
    "RESET_TOKEN_MAX_AGE": counted("RESET_TOKEN_MAX_AGE", tokens.RESET_MAX_AGE, 1),
    "LETTERS_WAITING_MAX": counted("LETTERS_WAITING_MAX", mailer.LETTERS_WAITING_MAX, 1),
    "MAIL_RATE": counted("MAIL_RATE", mailer.MAIL_RATE, 0),
    "TRUSTED_PROXIES": lambda text, production: proxies.parsed(text or TRUSTED_PROXIES_DEFAULT),
    **{name: retired(name) for name in RETIRED},
}
