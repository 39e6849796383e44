"""The command line: `guestbook serve [--host ADDRESS] [--port N] [--no-worker] [--development]`, the web
server with its mail worker beside it, `guestbook work`, the mail worker alone (production's rules), and
`guestbook admins add|remove ADDRESS` and `admins list`, the operator's grants of the job queue's
dashboard (admins.py).

The server is waitress (a production WSGI server, set up by server.py) in both modes, with a worker on
the `mail` queue in threads beside it (jobs.beside), so every process that serves
requests also sends the letters they queue, unless --no-worker or WORKER_BESIDE=0 leaves
them to `guestbook work` (processes.py runs both). --development is for a person running
it on their own machine: an embedded PostgreSQL in .pgdata/ when DATABASE_URL is
unset, a secret kept in .secret_key when SECRET_KEY is unset, letters written to
the outbox when MAIL_URL is unset (the /outbox page shows them), cookies without
Secure. Without --development, DATABASE_URL, a SECRET_KEY of SECRET_KEY_MIN
characters or more, an https:// BASE_URL and MAIL_URL must be set. Either way, and for
`work` too, every setting is checked before anything starts (settings.py): a bad one is
named, and the process exits 2 before it listens or works.
"""

import argparse
import os
import sys
from datetime import UTC

import psycopg
from psycopg.rows import namedtuple_row

from . import admins, db, processes, server

EXIT_NOTICE = 1  # `admins add` or `remove` changed nothing: no such confirmed account, or no such grant


def main(argv=None) -> int:
    """Runs the command the arguments name, and returns the exit status."""
    args = parser().parse_args(argv)
    return args.command(args)


def parser() -> argparse.ArgumentParser:
    """The command line's commands, serve, work and admins, and their options."""
    top = argparse.ArgumentParser(
        prog="guestbook", description="Serve the guestbook, send its letters, and say who may see its dashboard."
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
    serve.add_argument(
        "--no-worker",
        dest="worker_beside",
        action="store_false",
        default=None,
        help="no mail worker beside the server: `guestbook work` sends the letters (default: WORKER_BESIDE, else 1)",
    )
    serve.set_defaults(command=lambda args: processes.serve(args, given(args)))
    work = commands.add_parser(
        "work",
        help="work the mail queue, as a process of its own",
        description="Work the mail queue and the upkeep until SIGTERM, with the settings serve checks.",
    )
    work.set_defaults(command=processes.work)
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
    """The settings the command line gives, which win over the environment's: --host (HOST), --port (PORT) and
    --no-worker (WORKER_BESIDE=0)."""
    options = (("HOST", args.host), ("PORT", args.port), ("WORKER_BESIDE", args.worker_beside))
    return {name: str(int(value) if isinstance(value, bool) else value) for name, value in options if value is not None}


if __name__ == "__main__":
    sys.exit(main())
