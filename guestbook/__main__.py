"""The command line: `guestbook serve [--port N] [--development]`, the web server with its mail worker beside it.

The server is waitress (a production WSGI server) in both modes, with a worker on
the `mail` queue in threads beside it (jobs.beside), so every process that serves
requests also sends the letters they queue. --development is for a person running
it on their own machine: an embedded PostgreSQL in .pgdata/ when DATABASE_URL is
unset, a secret kept in .secret_key when SECRET_KEY is unset, letters written to
the outbox when MAIL_URL is unset (the /outbox page shows them), cookies without
Secure. Without --development, SECRET_KEY and DATABASE_URL must be set.
"""

import argparse
import logging
import os
import secrets
import signal
import sys
from pathlib import Path

import psycopg
import waitress

import jobs
import mail

from . import create_app, db, embedded, settings_from_environment, upkeep

DEFAULT_PORT = 5000  # the port served when neither --port nor PORT names one
THREADS = db.POOL_MAX  # requests served at once: one pool connection each
SECRET_FILE = Path(".secret_key")  # where development keeps the secret it made
SECRET_BYTES = 32  # random bytes in a secret made for development
HOSTS = {True: "127.0.0.1", False: "0.0.0.0"}  # the interface listened on, in development or not


def main(argv=None) -> int:
    """Runs the command the arguments name, and returns the exit status."""
    args = parser().parse_args(argv)
    return args.command(args)


def parser() -> argparse.ArgumentParser:
    """The command line's one command, serve, and its options."""
    top = argparse.ArgumentParser(prog="guestbook", description="Serve the guestbook.")
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve the guestbook, with its mail worker beside it")
    serve.add_argument("--port", type=int, default=None, metavar="N", help=f"the port (default: PORT, else {DEFAULT_PORT})")
    serve.add_argument("--development", action="store_true", help="local defaults: embedded database, kept secret, outbox")
    serve.set_defaults(command=serve_command)
    return top


def serve_command(args) -> int:
    """Serves until SIGINT or SIGTERM; the letter in hand is sent before the process ends."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # its start-up is told line by line otherwise
    missing = [name for name in ("SECRET_KEY", "DATABASE_URL") if not os.environ.get(name)]
    if missing and not args.development:
        print(f"guestbook: set {' and '.join(missing)}, or run with --development", file=sys.stderr)
        return 2
    try:
        performers = upkeep.performers  # the letters', made from MAIL_RETRY_INTERVALS now, and the upkeep's
        settings_from_environment()
    except ValueError as error:
        print(f"guestbook: {error}", file=sys.stderr)
        return 2
    database = None if os.environ.get("DATABASE_URL") else embedded.server(embedded.RUN_DATA)  # kept till exit
    url = os.environ.get("DATABASE_URL") or database.get_uri()
    port = args.port or int(os.environ.get("PORT") or DEFAULT_PORT)
    base = os.environ.setdefault("BASE_URL", f"http://127.0.0.1:{port}")  # mail.url_for reads it
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": os.environ.get("SECRET_KEY") or kept_secret(),
                      "DEVELOPMENT": args.development})
    server = waitress.create_server(app, host=HOSTS[args.development], port=port, threads=THREADS)  # listens now
    print(f"The guestbook is at {base}  ({letters_go()})", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends server.run() the way Ctrl-C does
    try:
        jobs.beside(lambda: psycopg.connect(url), mail.QUEUE, performers, server.run, schedules=upkeep.schedules)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        db.closed(app)
    return 0


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
        return f"letters go to {url.rpartition('@')[2]}"
    return f"letters go to the folder {mail.outbox_folder()}/, shown at /outbox in development"


if __name__ == "__main__":
    sys.exit(main())
