"""The command line: `guestbook serve [--host ADDRESS] [--port N] [--development]`, the web server with its
mail worker beside it, and `guestbook admins add|remove ADDRESS` and `admins list`, the operator's grants of
the job queue's dashboard (admins.py).

The server is waitress (a production WSGI server, set up by server.py) in both modes, with a worker on
the `mail` queue in threads beside it (jobs.beside), so every process that serves
requests also sends the letters they queue. --development is for a person running
it on their own machine: an embedded PostgreSQL in .pgdata/ when DATABASE_URL is
unset, a secret kept in .secret_key when SECRET_KEY is unset, letters written to
the outbox when MAIL_URL is unset (the /outbox page shows them), cookies without
Secure. Without --development, DATABASE_URL, a SECRET_KEY of SECRET_KEY_MIN
characters or more, an https:// BASE_URL and MAIL_URL must be set. Either way every
setting is checked before anything starts (settings.py): a bad one is named, and the
process exits 2 before it listens.
"""

import argparse
import logging
import os
import secrets
import signal
import sys
from datetime import UTC
from pathlib import Path

import psycopg
from psycopg.rows import namedtuple_row

import jobs
import mail

from . import (
    admins,
    create_app,
    dashboard,
    db,
    development,
    embedded,
    mailer,
    server,
    settings,
    upkeep,
)

SECRET_FILE = Path(".secret_key")  # where development keeps the secret it made
SECRET_BYTES = 32  # random bytes in a secret made for development
EXIT_NOTICE = 1  # `admins add` or `remove` changed nothing: no such confirmed account, or no such grant


def main(argv=None) -> int:
    """Runs the command the arguments name, and returns the exit status."""
    args = parser().parse_args(argv)
    return args.command(args)


def parser() -> argparse.ArgumentParser:
    """The command line's commands, serve and admins, and their options."""
    top = argparse.ArgumentParser(
        prog="guestbook", description="Serve the guestbook, and say who may see its dashboard."
    )
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the guestbook, with its mail worker beside it")
    serve.add_argument(
        "--host",
        default=None,
        metavar="ADDRESS",
        help="the address listened on (default: HOST, else 127.0.0.1 in development and 0.0.0.0 otherwise)",
    )
    serve.add_argument(
        "--port", type=int, default=None, metavar="N", help=f"the port (default: PORT, else {server.DEFAULT_PORT})"
    )
    serve.add_argument(
        "--development", action="store_true", help="local defaults: embedded database, kept secret, outbox"
    )
    serve.set_defaults(command=serve_command)
    grants = commands.add_parser(
        "admins",
        help="grant, take back or list the dashboard at /jobs",
        description=(
            "Grant the job queue's dashboard at /jobs to a confirmed account, take it back, or list who holds it, "
            "on the database DATABASE_URL names. Exits 0, or 1 when nothing changed."
        ),
    )
    actions = grants.add_subparsers(required=True, metavar="ACTION")
    for action, summary in (
        ("add", "grant the dashboard to the confirmed account of ADDRESS"),
        ("remove", "take the dashboard back from the account of ADDRESS"),
    ):
        chosen = actions.add_parser(action, help=summary, description=summary.capitalize() + ".")
        chosen.add_argument("address", metavar="ADDRESS")
        chosen.set_defaults(command=admins_command, action=action)
    actions.add_parser("list", help="list the accounts that hold the dashboard").set_defaults(
        command=admins_command, action="list", address=None
    )
    return top


def serve_command(args) -> int:
    """Serves until SIGINT or SIGTERM; the letter in hand is sent before the process ends."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # its start-up is told line by line otherwise
    try:
        values = settings.checked({**os.environ, **given(args)}, production=not args.development)
    except settings.Invalid as invalid:
        print("\n".join(f"guestbook: {problem}" for problem in invalid.problems), file=sys.stderr)
        return 2
    host, port = values["HOST"], values["PORT"]
    url = values["DATABASE_URL"]
    database = None  # the embedded server, when DATABASE_URL is not set: kept till exit
    if not url:
        try:
            database = embedded.server(embedded.RUN_DATA)
        except embedded.NotInstalled as error:
            print(f"guestbook: {error}", file=sys.stderr)
            return 2
        url = database.get_uri()
        print(
            f"The database is at {url}  (for `python -m jobs` and `python -m guestbook admins`, "
            "set DATABASE_URL to it, or run `make jobs ARGS=status` beside this server)",
            flush=True,
        )
    base = os.environ.setdefault("BASE_URL", f"http://127.0.0.1:{port}")  # mail.url_for reads it
    app = create_app(
        {
            "DATABASE_URL": url,
            "SECRET_KEY": values["SECRET_KEY"] or kept_secret(),
            "DEVELOPMENT": args.development,
        }
    )
    with psycopg.connect(url, autocommit=True) as conn:  # the provider's rate, for every worker of the mail queue
        jobs.prepared(conn)
        mailer.rate_kept(conn, app.config["MAIL_RATE"])
    served = server.listening(app, host, port)
    print(f"The guestbook is at {base}  ({letters_go()})", flush=True)
    if args.development:  # the outbox and the dashboard show live links: for the person who started it only
        print(
            f"Open {development.link(app, base)} to see /outbox and /jobs: every page under that link shows them "
            "(keep it; no other user of this machine can see them)",
            flush=True,
        )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends served.run() the way Ctrl-C does
    try:
        jobs.beside(
            lambda: psycopg.connect(url, **jobs.keepalives()),
            mail.QUEUE,
            upkeep.performers_for(app),
            served.run,
            schedules=upkeep.schedules,
            on_start=lambda worker: dashboard.shows_worker(app, worker),
        )
    except KeyboardInterrupt:
        pass
    finally:
        served.close()
        db.closed(app)
    return 0


def admins_command(args) -> int:
    """Adds, removes or lists the grants of the dashboard, on DATABASE_URL's database."""
    if not os.environ.get("DATABASE_URL"):
        print("guestbook: set DATABASE_URL to the guestbook's database", file=sys.stderr)
        return 2
    address = (args.address or "").strip().lower()  # as accounts keep addresses
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True, row_factory=namedtuple_row) as conn:
        db.prepared(conn)
        if args.action == "list":
            rows = admins.listed(conn)
            print(
                "\n".join(f"{row.email}  since {row.granted_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC" for row in rows)
                if rows
                else "no account may see the dashboard"
            )
            return 0
        if args.action == "add":
            said = admins.granted(conn, address)
            print(said or f"no confirmed account has the address {address}: it must sign up and confirm first")
            return 0 if said else EXIT_NOTICE
        if admins.revoked(conn, address):
            print(f"{address} may no longer see the dashboard, from its next request on")
            return 0
        print(f"{address} could not see the dashboard")
        return EXIT_NOTICE


def given(args) -> dict[str, str]:
    """The settings the command line gives, which win over the environment's: --host (HOST) and --port (PORT)."""
    return {name: str(value) for name, value in (("HOST", args.host), ("PORT", args.port)) if value is not None}


def kept_secret() -> str:
    """The secret development keeps in SECRET_FILE, made on the first run."""
    if not SECRET_FILE.exists():
        SECRET_FILE.touch(mode=0o600)
        SECRET_FILE.write_text(secrets.token_hex(SECRET_BYTES))
    return SECRET_FILE.read_text().strip()


def letters_go() -> str:
    """Where letters go, said for the start-up line (without the password MAIL_URL may hold)."""
    url = os.environ.get("MAIL_URL")
    if url:
        scheme, host, port = mail.server_named(url)
        return f"letters go to {scheme}://{host}:{port}"
    return f"letters go to the folder {mail.outbox_folder()}/, shown at /outbox in development"


if __name__ == "__main__":
    sys.exit(main())
