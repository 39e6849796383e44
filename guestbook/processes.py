"""The two processes a deploy runs, each checking every setting (settings.py) before it starts anything.

`serve`: waitress serving the app (server.py), with a worker on the `mail` queue in threads
beside it (jobs.beside) unless WORKER_BESIDE=0 or --no-worker says a process of its own
sends the letters. `work`: that process, the mail worker alone (`python -m jobs work`, run
on the guestbook's performers and schedules). Both log in jobs' LOG_FORMAT.
"""

import logging
import os
import secrets
import signal
import sys
from pathlib import Path

import psycopg

import jobs
import jobs.cli.main
import mail

from . import create_app, dashboard, db, development, embedded, mailer, server, settings, upkeep

SECRET_FILE = Path(".secret_key")  # where development keeps the secret it made
SECRET_BYTES = 32  # random bytes in a secret made for development
EXIT_SETTINGS = 2  # a setting is not valid, or the embedded database is not installed: nothing started
WORK = ["work", mail.QUEUE, "--performers", "guestbook.upkeep:performers", "--schedules", "guestbook.upkeep:schedules"]


def serve(args, given: dict[str, str]) -> int:
    """Serves until SIGINT or SIGTERM, with the worker beside unless told not to; the letter in hand is sent first."""
    values = checked(given, args.development)
    if values is None:
        return EXIT_SETTINGS
    url, database = values["DATABASE_URL"], None  # database: the embedded server, when DATABASE_URL is unset
    if not url:
        database = embedded_database()  # kept till exit
        if database is None:
            return EXIT_SETTINGS
        url = database.get_uri()
    base = os.environ.setdefault("BASE_URL", f"http://127.0.0.1:{values['PORT']}")  # mail.url_for reads it
    app = create_app(
        {"DATABASE_URL": url, "SECRET_KEY": values["SECRET_KEY"] or kept_secret(), "DEVELOPMENT": args.development}
    )
    rate_kept(url, app.config["MAIL_RATE"])
    served = server.listening(app, values["HOST"], values["PORT"])
    print(f"The guestbook is at {base}  ({letters_go(values['WORKER_BESIDE'])})", flush=True)
    if args.development:  # the outbox and the dashboard show live links: for the person who started it only
        print(
            f"Open {development.link(app, base)} to see /outbox and /jobs: every page under that link shows them "
            "(keep it; no other user of this machine can see them)",
            flush=True,
        )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends served.run() the way Ctrl-C does
    try:
        run(app, served, url, values["WORKER_BESIDE"])
    except KeyboardInterrupt:
        pass
    finally:
        served.close()
        db.closed(app)
    return 0


def run(app, served, url: str, beside: bool) -> None:
    """Runs the server until it is stopped, with a worker on the mail queue beside it when `beside`."""
    if not beside:
        served.run()
        return
    jobs.beside(
        lambda: psycopg.connect(url, **jobs.keepalives()),
        mail.QUEUE,
        upkeep.performers_for(app),  # the letters' (written in app's context when they leave) and the upkeep's
        served.run,
        schedules=upkeep.schedules,
        on_start=lambda worker: dashboard.shows_worker(app, worker),
    )


def embedded_database():
    """The embedded PostgreSQL of development, started, its address printed; None once it says it is not installed."""
    try:
        database = embedded.server(embedded.RUN_DATA)
    except embedded.NotInstalled as error:
        print(f"guestbook: {error}", file=sys.stderr)
        return None
    print(
        f"The database is at {database.get_uri()}  (for `python -m jobs` and `python -m guestbook admins`, "
        "set DATABASE_URL to it, or run `make jobs ARGS=status` beside this server)",
        flush=True,
    )
    return database


def work(args) -> int:
    """Works the mail queue until SIGINT or SIGTERM, as `python -m jobs work` does, once every setting is checked."""
    values = checked({}, development=False)  # development's letters leave from the worker beside its server
    if values is None:
        return EXIT_SETTINGS
    with psycopg.connect(values["DATABASE_URL"], autocommit=True) as conn:
        db.prepared(conn)  # the guestbook's tables, which the upkeep's jobs delete from
    rate_kept(values["DATABASE_URL"], values["MAIL_RATE"])
    return jobs.cli.main.main(WORK)


def checked(given: dict[str, str], development: bool) -> dict | None:
    """Every setting, from the environment and `given` over it, with logging set up; None once a problem is said."""
    logging.basicConfig(level=logging.INFO, format=jobs.cli.main.LOG_FORMAT)
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # its start-up is told line by line otherwise
    try:
        return settings.checked({**os.environ, **given}, production=not development)
    except settings.Invalid as invalid:
        print("\n".join(f"guestbook: {problem}" for problem in invalid.problems), file=sys.stderr)
        return None


def rate_kept(url: str, rate: int) -> None:
    """Sets MAIL_RATE, the provider's rate, for every worker of the mail queue."""
    with psycopg.connect(url, autocommit=True) as conn:
        jobs.prepared(conn)
        mailer.rate_kept(conn, rate)


def kept_secret() -> str:
    """The secret development keeps in SECRET_FILE, made on the first run."""
    if not SECRET_FILE.exists():
        SECRET_FILE.touch(mode=0o600)
        SECRET_FILE.write_text(secrets.token_hex(SECRET_BYTES))
    return SECRET_FILE.read_text().strip()


def letters_go(beside: bool) -> str:
    """Where letters go, and who sends them, said for the start-up line (without the password MAIL_URL may hold)."""
    sender = "" if beside else "; `guestbook work` sends them"
    url = os.environ.get("MAIL_URL")
    if url:
        scheme, host, port = mail.server_named(url)
        return f"letters go to {scheme}://{host}:{port}{sender}"
    return f"letters go to the folder {mail.outbox_folder()}/, shown at /outbox in development{sender}"
