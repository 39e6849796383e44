"""The command line: a worker as a process of its own, and a look at the queue, on DATABASE_URL.

  python -m jobs work QUEUE[,QUEUE...] --performers MODULE:ATTRIBUTE   run a worker
  python -m jobs prepare                           make the tables, or bring them up to date
  python -m jobs status                            count each queue's jobs by state
  python -m jobs failed [--queue QUEUE] [--full]   list the jobs that failed for good
  python -m jobs retry ID [ID ...] | --all         put failed jobs back in the queue
  python -m jobs discard ID [ID ...] | --all       delete failed jobs

`work` prepares the tables (jobs.prepared) and checks that it can claim, or exits
EXIT_DATABASE with the server's message; SIGTERM or SIGINT lets the jobs in hand finish
and settle, then it exits 0. The other commands exit, for scripts: EXIT_OK (0) done,
and for `failed` the shelf is empty; EXIT_NOTICE (1) `failed` found jobs on the shelf,
or `retry`/`discard` changed no job; EXIT_USAGE (2) the command line was wrong or
DATABASE_URL is unset; EXIT_DATABASE (3) the database could not be reached or refused a
statement. They never print a job's arguments.
"""

import argparse
import importlib
import logging
import os
import signal
import sys
from datetime import datetime, timezone

import psycopg

from . import complaints, schema, shelf, store
from .worker import POLL_INTERVAL, Worker

APPLICATION_NAME = "jobs worker"  # how a worker's connections show in pg_stat_activity
COMMAND_NAME = "jobs command"  # how the connection of status, failed, retry and discard shows there
EXIT_OK = 0  # done; for `failed`, the shelf is empty
EXIT_NOTICE = 1  # `failed` found jobs on the shelf; `retry` or `discard` changed no job
EXIT_USAGE = 2  # the command line was wrong (argparse's own code), or DATABASE_URL is unset
EXIT_DATABASE = 3  # the database could not be reached, or refused a statement (for `work`: one it must run)
REASON_WIDTH = 60  # characters of a reason the `failed` table shows; --full shows all of it


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if hasattr(args, "ids") and bool(args.ids) == args.all:
        args.usage("name the jobs by ID, or give --all (not both)")  # exits EXIT_USAGE
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("jobs: set DATABASE_URL to the database to work on", file=sys.stderr)
        return EXIT_USAGE
    if args.command is work_command:
        return work_command(args, url)  # a worker reconnects by itself when cut off
    return inspected(args, url)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m jobs", description="Work and inspect the jobs table.", epilog=(
        "Exit codes: 0 done; 1 `failed` found failed jobs, or `retry`/`discard` changed none; "
        "2 a wrong command line, or DATABASE_URL unset; 3 the database could not be reached or refused."))
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    work = commands.add_parser("work", help="run a worker until SIGTERM", description="Run a worker until SIGTERM or SIGINT.")
    work.add_argument("queues", metavar="QUEUE[,QUEUE...]", type=lambda text: [q for q in text.split(",") if q])
    work.add_argument("--performers", required=True, metavar="MODULE:ATTRIBUTE", help="the dict mapping job names to performers")
    work.add_argument("--lease", type=float, default=store.LEASE, metavar="SECONDS", help=f"how long a claim holds a job (default {store.LEASE:g})")
    work.add_argument("--threads", type=int, default=1, metavar="N", help="jobs run at once (default 1); uses N + 1 connections")
    work.add_argument("--poll", type=float, default=POLL_INTERVAL, metavar="SECONDS", help=f"idle look-up interval (default {POLL_INTERVAL:g})")
    work.add_argument("--no-listen", dest="listen", action="store_false", help="poll only (for PgBouncer in transaction mode)")
    work.set_defaults(command=work_command)
    prepare = commands.add_parser("prepare", help="make the tables, or bring them up to date", description=(
        "Make the jobs tables, or take the steps of their schema they lack, as their owner; "
        "once it has run, a role that may only SELECT, INSERT, UPDATE and DELETE can work and queue jobs."))
    prepare.set_defaults(command=prepare_command)
    shelf_commands_added(commands)
    return top


def shelf_commands_added(commands) -> None:
    """Adds status, failed, retry and discard to the command line's commands."""
    status = commands.add_parser("status", help="count each queue's jobs by state", description=(
        "Count each queue's jobs: due now, scheduled for later, in work, failed for good, "
        "and how long the oldest due job has been due. Exits 0."))
    status.set_defaults(command=status_command)
    failed = commands.add_parser("failed", help="list the jobs that failed for good", description=(
        "List the jobs that failed for good, with their last reason (never their arguments). "
        "Exits 0 when there are none and 1 when there are, so a script can raise the alarm."))
    failed.add_argument("--queue", metavar="QUEUE", help="only the jobs of this queue")
    failed.add_argument("--full", action="store_true", help="every reason and the last traceback of each job")
    failed.set_defaults(command=failed_command)
    retry = commands.add_parser("retry", help="put failed jobs back in the queue", description=(
        "Put failed jobs back in the queue, due at once, with their attempts counted from 0. "
        "Exits 0 when a job went back and 1 when none did."))
    discard = commands.add_parser("discard", help="delete failed jobs", description=(
        "Delete failed jobs. Exits 0 when a job was deleted and 1 when none was."))
    for chosen, command in ((retry, retry_command), (discard, discard_command)):
        chosen.add_argument("ids", nargs="*", type=int, metavar="ID", help="a job on the failed shelf")
        chosen.add_argument("--all", action="store_true", help="every job on the failed shelf")
        chosen.set_defaults(command=command, usage=chosen.error)


def work_command(args, url: str) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(process)d %(message)s")
    performers = imported(args.performers)
    try:
        with psycopg.connect(url, autocommit=True) as db:
            schema.prepared(db)
            refused = complaints.refusal(db, args.queues)
    except (psycopg.Error, schema.SchemaError) as error:
        print(f"jobs: the worker cannot start: {error}", file=sys.stderr)
        return EXIT_DATABASE
    if refused is not None:
        print(f"jobs: the worker cannot work: {complaints.described(refused)}", file=sys.stderr)
        return EXIT_DATABASE
    # Polling is for PgBouncer in transaction mode, where prepared statements would
    # meet server connections that never prepared them: psycopg is told not to prepare.
    options = {"application_name": APPLICATION_NAME} | ({} if args.listen else {"prepare_threshold": None})
    running = Worker(lambda: psycopg.connect(url, **options), args.queues, performers, threads=args.threads,
                     lease=args.lease, poll=args.poll, listen=args.listen)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: running.stop())
    running.start()
    logging.getLogger("jobs").info("working %s with %s thread(s)", ",".join(args.queues), args.threads)
    while not running.join(timeout=0.5):
        pass  # join in short steps, so the signal handlers run promptly
    return 0


def inspected(args, url: str) -> int:
    """Runs status, failed, retry or discard on a connection of its own, and answers its exit code."""
    try:
        with psycopg.connect(url, autocommit=True, application_name=COMMAND_NAME) as db:
            return args.command(args, db)
    except (psycopg.Error, schema.SchemaError) as error:
        print(f"jobs: the database failed: {error}", file=sys.stderr)
        return EXIT_DATABASE


def prepare_command(args, db) -> int:
    """Makes or upgrades the tables, and says at which version they were and are."""
    before = schema.version(db)
    schema.prepared(db)
    print(f"jobs tables at version {schema.version(db)}" + (f" (were at {before})" if before < schema.VERSION else ""))
    return EXIT_OK


def status_command(args, db) -> int:
    """Prints each queue's figures as a table."""
    figures = shelf.status(db)
    if not figures:
        print("no jobs")
        return EXIT_OK
    rows = [[q["queue"], q["due"], q["scheduled"], q["in_work"], q["failed"], age(q["oldest_due_age"])] for q in figures]
    print(table(["QUEUE", "DUE", "SCHEDULED", "IN WORK", "FAILED", "OLDEST DUE"], rows))
    return EXIT_OK


def failed_command(args, db) -> int:
    """Prints the failed shelf as a table, or each job in full; exits EXIT_NOTICE when it holds jobs."""
    shelved = shelf.failed(db, args.queue)
    if not shelved:
        print("no job has failed for good" + (f" on queue {args.queue}" if args.queue else ""))
        return EXIT_OK
    if args.full:
        print("\n\n".join(in_full(job) for job in shelved))
    else:
        rows = [[j["id"], j["queue"], j["name"], j["attempts"], moment(j["failed_at"]), first_line(j["failure"])]
                for j in shelved]
        print(table(["ID", "QUEUE", "NAME", "ATTEMPTS", "FAILED AT (UTC)", "LAST REASON"], rows))
    return EXIT_NOTICE


def retry_command(args, db) -> int:
    """Puts failed jobs back in the queue, and says which stayed on the shelf and why."""
    back = shelf.retried(db, *args.ids, every=args.all)
    print(f"{jobs_counted(back)} back in the queue")
    held = "another job with the same unique key is waiting or in work"
    if args.all:
        stayed = sum(q["failed"] for q in shelf.status(db))
        if stayed:
            print(f"{jobs_counted(stayed)} stayed on the shelf: {held}")
    elif back < len(set(args.ids)):
        print(f"{jobs_counted(len(set(args.ids)) - back)} stayed: not on the failed shelf, or {held}")
    return EXIT_OK if back else EXIT_NOTICE


def discard_command(args, db) -> int:
    """Deletes failed jobs, and says how many of those named were not on the shelf."""
    gone = shelf.discarded(db, *args.ids, every=args.all)
    print(f"{jobs_counted(gone)} discarded")
    if not args.all and gone < len(set(args.ids)):
        print(f"{jobs_counted(len(set(args.ids)) - gone)} not on the failed shelf")
    return EXIT_OK if gone else EXIT_NOTICE


def table(headers: list[str], rows: list[list]) -> str:
    """Rows under their headers in plain-text columns, numbers aligned right."""
    right = [all(isinstance(row[n], int) for row in rows) for n in range(len(headers))]
    cells = [[str(value) for value in row] for row in [headers, *rows]]
    widths = [max(len(row[n]) for row in cells) for n in range(len(headers))]
    lines = ["  ".join(cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right)).rstrip()
             for row in cells]
    return "\n".join(lines)


def in_full(job: dict) -> str:
    """One failed job with every reason and its last traceback, for `failed --full`."""
    lines = [f"job {job['id']}: {job['name']} on {job['queue']}, failed for good at "
             f"{moment(job['failed_at'])} UTC after {job['attempts']} attempt(s)"]
    lines += [f"  reason {n}: {reason}" for n, reason in enumerate(job["reasons"], 1)]
    lines += ["  traceback of the last failure:" if job["traceback"] else "  no traceback"]
    lines += ["    " + line for line in job["traceback"].splitlines()]
    return "\n".join(lines)


def moment(ms: int) -> str:
    """A moment in ms since the epoch, as a UTC date and time."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def age(seconds: float | None) -> str:
    """A duration as people read it (42 s, 7 min, 3 h, 2 d), or "-" for none."""
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit}"
    return f"{seconds:.0f} s"


def first_line(reason: str) -> str:
    """The first line of a reason, cut to REASON_WIDTH characters."""
    line = reason.splitlines()[0] if reason else ""
    return line if len(line) <= REASON_WIDTH else line[: REASON_WIDTH - 3] + "..."


def jobs_counted(n: int) -> str:
    """How many jobs, in words: "1 job", "2 jobs"."""
    return f"{n} job" if n == 1 else f"{n} jobs"


def imported(spec: str):
    """The object `module:attribute` names."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise SystemExit(f"jobs: --performers takes module:attribute, got {spec!r}")
    return getattr(importlib.import_module(module), attribute)


if __name__ == "__main__":
    sys.exit(main())
