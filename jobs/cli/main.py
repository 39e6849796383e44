"""The command line: a worker as a process of its own, and a look at the queue, on DATABASE_URL.

  python -m jobs work QUEUE[,QUEUE...] --performers MODULE:ATTRIBUTE [--schedules MODULE:ATTRIBUTE]
  python -m jobs schedules [--schedules MODULE:ATTRIBUTE]   each schedule's last and next run
  python -m jobs prepare                           make the tables, or bring them up to date
  python -m jobs status                            count each queue's jobs by state
  python -m jobs failed [--queue QUEUE] [--full] [--limit N] [--after ID]
                                                   a page of the jobs that failed for good
  python -m jobs retry ID [ID ...] | --all         put failed jobs back in the queue
  python -m jobs discard ID [ID ...] | --all       delete failed jobs
  python -m jobs pause QUEUE | resume QUEUE        stop and start the claims of a queue
  python -m jobs cancel ID [ID ...]                cancel jobs that wait or run
  python -m jobs workers                           the workers at work, and those gone in the last hour

`work` prepares the tables (jobs.prepared) and checks that it can claim, or exits
EXIT_DATABASE with the server's message; SIGTERM or SIGINT lets the jobs in hand finish
and settle for up to --grace seconds (GRACE), gives back whatever still runs then, and
exits 0; a second signal gives everything back at once. The other commands
(commands.py, reports.py) exit, for scripts: EXIT_OK (0) done, and for `failed` the shelf is empty;
EXIT_NOTICE (1) `failed` found jobs on the shelf, or `retry`/`discard`/`pause`/`resume`/
`cancel` changed nothing; EXIT_USAGE (2) the command line was wrong or
DATABASE_URL is unset; EXIT_DATABASE (3) the database could not be reached or refused a
statement. They never print a job's arguments.
"""

import argparse
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from ..core.job import LEASE
from ..runtime import refusals
from ..runtime.connections import keepalives
from ..runtime.maintenance import POLL_INTERVAL
from ..runtime.worker import Worker
from ..store import schema
from .commands import Argument, commands_added
from .reports import imported

APPLICATION_NAME = "jobs worker"  # how a worker's connections show in pg_stat_activity
COMMAND_NAME = "jobs command"  # how the connection of status, failed, retry and discard shows there
EXIT_USAGE = 2  # the command line was wrong (argparse's own code), or DATABASE_URL is unset
EXIT_DATABASE = 3  # the database could not be reached, or refused a statement (for `work`: one it must run)
GRACE = 30.0  # seconds a SIGTERM lets the jobs in hand run on: Kubernetes' default grace period
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s"  # a worker's log line: time, level,
# logger, process id, message (an app that runs workers beside its server logs alike)
JOIN_STEP = 0.1  # seconds between the main thread's looks at the stop signals received and at the worker's end
# The help of `work`'s options.
LEASE_SAID = f"how long the worker may fall silent before its jobs go to others (default {LEASE:g})"
THREADS_SAID = "jobs run at once (default 1); uses N + 2 connections"
POLL_SAID = f"idle look-up interval (default {POLL_INTERVAL:g})"
LISTEN_SAID = "poll only (for PgBouncer in transaction mode)"
TIMEOUT_SAID = "how long a job may run when its policy says nothing (default: no limit)"
GRACE_SAID = f"on SIGTERM, how long jobs in hand may run on before they are given back (default {GRACE:g})"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if hasattr(args, "all") and bool(args.ids) == args.all:
        args.usage("name the jobs by ID, or give --all (not both)")  # exits EXIT_USAGE
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("jobs: set DATABASE_URL to the database to work on", file=sys.stderr)
        return EXIT_USAGE
    if args.command is work_command:
        # A worker reconnects by itself when cut off. (The `is` test against args.command, an Any, makes
        # mypy take work_command for an Any too, and so its answer.)
        return work_command(args, url)  # type: ignore[no-any-return]
    return inspected(args, url)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m jobs",
        description="Work and inspect the jobs table.",
        epilog=(
            "Exit codes: 0 done; 1 `failed` found failed jobs, or `retry`/`discard`/`pause`/`resume`/`cancel`/"
            "`unlimit` changed nothing; "
            "2 a wrong command line, or DATABASE_URL unset; 3 the database could not be reached or refused."
        ),
    )
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    work = commands.add_parser(
        "work", help="run a worker until SIGTERM", description="Run a worker until SIGTERM or SIGINT."
    )
    for names, options in work_arguments():
        work.add_argument(*names, **options)
    work.set_defaults(command=work_command)
    commands_added(commands)
    return top


def work_arguments() -> list[Argument]:
    """The arguments of `work`: its queues, its performers and schedules, and how it works them."""
    importing = {"metavar": "MODULE:ATTRIBUTE"}
    return [
        (("queues",), {"metavar": "QUEUE[,QUEUE...]", "type": queue_list}),
        (
            ("--performers",),
            importing
            | {
                "required": True,
                "type": importable("--performers"),
                "help": "the dict mapping job names to performers",
            },
        ),
        (("--lease",), {"type": seconds, "default": LEASE, "metavar": "SECONDS", "help": LEASE_SAID}),
        (("--threads",), {"type": threads, "default": 1, "metavar": "N", "help": THREADS_SAID}),
        (("--poll",), {"type": seconds, "default": POLL_INTERVAL, "metavar": "SECONDS", "help": POLL_SAID}),
        (("--no-listen",), {"dest": "listen", "action": "store_false", "help": LISTEN_SAID}),
        (("--timeout",), {"type": seconds, "default": None, "metavar": "SECONDS", "help": TIMEOUT_SAID}),
        (("--grace",), {"type": grace, "default": GRACE, "metavar": "SECONDS", "help": GRACE_SAID}),
        (
            ("--schedules",),
            importing | {"type": importable("--schedules"), "help": "a list of jobs.every(...) schedules to fire"},
        ),
    ]


def work_command(args: argparse.Namespace, url: str) -> int:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    performers, held = args.performers, args.schedules or ()  # imported by the parser (`importable`)
    try:
        with psycopg.connect(url, autocommit=True) as db:
            schema.prepared(db)
            refused = refusals.refusal(db, args.queues)
    except (psycopg.Error, schema.SchemaError) as error:
        print(f"jobs: the worker cannot start: {error}", file=sys.stderr)
        return EXIT_DATABASE
    if refused is not None:
        print(f"jobs: the worker cannot work: {refusals.described(refused)}", file=sys.stderr)
        return EXIT_DATABASE
    # Polling is for PgBouncer in transaction mode, where prepared statements would
    # meet server connections that never prepared them: psycopg is told not to prepare.
    # Keepalives let the kernel drop a connection whose packets are lost (connections.py);
    # those DATABASE_URL sets itself are its own.
    given = psycopg.conninfo.conninfo_to_dict(url)
    options: dict[str, Any] = {name: value for name, value in keepalives().items() if name not in given}
    options |= {"application_name": APPLICATION_NAME} | ({} if args.listen else {"prepare_threshold": None})
    running = Worker(
        lambda: psycopg.connect(url, **options),
        args.queues,
        performers,
        threads=args.threads,
        lease=args.lease,
        poll=args.poll,
        listen=args.listen,
        timeout=args.timeout,
        schedules=held,
    )
    # A signal's handler runs on the main thread between two of its statements, wherever they
    # were: inside the worker's lock, which join takes, a handler that stopped the worker (stop
    # takes that lock too) would wait on itself forever. So the handler only notes the signal
    # (an append takes no lock), and this loop stops the worker within JOIN_STEP.
    signals: list[int] = []  # the stop signals received: the first allows the grace period, the second none
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: signals.append(signum))
    running.start()
    logging.getLogger("jobs").info("working %s with %s thread(s)", ",".join(args.queues), args.threads)
    heeded = 0
    while not running.join(timeout=JOIN_STEP):
        if len(signals) > heeded:
            heeded = len(signals)
            running.stop(grace=args.grace if heeded == 1 else 0)
    return 0


def inspected(args: argparse.Namespace, url: str) -> int:
    """Runs status, failed, retry or discard on a connection of its own, and answers its exit code."""
    try:
        with psycopg.connect(url, autocommit=True, application_name=COMMAND_NAME) as db:
            code: int = args.command(args, db)  # a Command (commands.py)
            return code
    except (psycopg.Error, schema.SchemaError) as error:
        print(f"jobs: the database failed: {error}", file=sys.stderr)
        return EXIT_DATABASE


def seconds(text: str) -> float:
    """A number of seconds above 0, for argparse."""
    value = number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text}")
    return value


def grace(text: str) -> float:
    """A number of seconds, 0 or more, for argparse: 0 gives the jobs in hand back at once."""
    value = number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds, 0 or more, got {text}")
    return value


def number(text: str) -> float:
    """A finite number, for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds, got {text}")
    return value


def threads(text: str) -> int:
    """How many work threads: a whole number, 1 or more, for argparse."""
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads, 1 or more, got {text!r}")
    return int(text)


def queue_list(text: str) -> list[str]:
    """The queues of `work`, comma-separated, for argparse: one or more, none empty."""
    queues = [queue.strip() for queue in text.split(",")]
    if not any(queues) or "\x00" in text:
        raise argparse.ArgumentTypeError(f"name one queue or more, separated by commas, got {text!r}")
    return [queue for queue in queues if queue]


def importable(option: str) -> Callable[[str], Any]:
    """An argparse type for `option` that imports the object MODULE:ATTRIBUTE names, before anything is done."""

    def parsed(spec: str) -> Any:
        try:
            return imported(spec, option)
        except SystemExit as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix("jobs: ")) from None

    return parsed
