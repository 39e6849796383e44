"""The command line's commands but `work`: their parsers, the types of their arguments, and those that change
the queue.

`python -m jobs` (main.py) parses the command line and opens the connection; each command runs on it and
answers the exit code. Those that look at the queue and print tables are in reports.py; here, those that
change it: retry and discard the shelf, pause and resume a queue, cancel jobs, limit and unlimit a queue
(limits.py: the limit holds from the next claim on every worker, with no deploy), and prepare the tables.
"""

import argparse
import re
from collections.abc import Callable
from typing import Any, TypeAlias

import psycopg

from ..store import control, limits, schema, shelf
from .reports import (
    EXIT_NOTICE,
    EXIT_OK,
    failed_command,
    jobs_counted,
    schedules_command,
    status_command,
    workers_command,
)

ID_MAX = 2**63 - 1  # the largest job id the table can hold (bigint)
RATE = re.compile(r"(\d+)/(\d+(?:\.\d+)?)")  # a rate as the command line writes it: JOBS/SECONDS

# What add_subparsers() answers; in quotes, as the class takes no type argument at run time.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Command = Callable[[argparse.Namespace, psycopg.Connection[Any]], int]  # its arguments and connection to its exit code
Argument = tuple[tuple[str, ...], dict[str, Any]]  # add_argument's names and options


def commands_added(commands: Commands) -> None:
    """Adds every command but `work` to the command line's commands, in the order `--help` lists them; each may
    refuse its arguments as argparse would, through `args.usage`."""
    for name, run, summary, description, arguments in declared():
        parser = commands.add_parser(name, help=summary, description=description)
        parser.set_defaults(command=run, usage=parser.error)
        for names, options in arguments:
            parser.add_argument(*names, **options)


def declared() -> list[tuple[str, Command, str, str, list[Argument]]]:
    """Each command but `work`: its name, what runs it, its summary and description, and its arguments."""
    queue: Argument = (("queue",), {"metavar": "QUEUE", "type": queue_name})
    waiting: Argument = (
        ("ids",),
        {"nargs": "+", "type": positive, "metavar": "ID", "help": "a job that waits or runs"},
    )
    shelved: list[Argument] = [
        (("ids",), {"nargs": "*", "type": positive, "metavar": "ID", "help": "a job on the failed shelf"}),
        (("--all",), {"action": "store_true", "help": "every job on the failed shelf"}),
    ]
    page: list[Argument] = [
        (("--queue",), {"metavar": "QUEUE", "help": "only the jobs of this queue"}),
        (("--full",), {"action": "store_true", "help": "every reason and the last traceback of each job"}),
        (("--limit",), {"type": positive, "default": shelf.PAGE, "metavar": "N", "help": PAGE_SAID}),
        (("--after",), {"type": positive, "metavar": "ID", "help": "the page after the one that ended with job ID"}),
    ]
    limit: list[Argument] = [
        queue,
        (("--rate",), {"metavar": "JOBS/SECONDS", "type": rate, "help": "jobs started in any window of SECONDS"}),
        (("--concurrency",), {"metavar": "JOBS", "type": int, "help": "jobs in work at once"}),
        (("--per-key",), {"metavar": "JOBS", "type": int, "help": "jobs of one concurrency key in work at once"}),
    ]
    code: Argument = (
        ("--schedules",),
        {"metavar": "MODULE:ATTRIBUTE", "help": "the code's schedules, for their next runs"},
    )
    return [
        ("status", status_command, "count each queue's jobs by state", STATUS, []),
        ("failed", failed_command, "list the jobs that failed for good", FAILED, page),
        ("retry", retry_command, "put failed jobs back in the queue", RETRY, shelved),
        ("discard", discard_command, "delete failed jobs", DISCARD, shelved),
        ("pause", pause_command, "stop the claims of a queue", PAUSE, [queue]),
        ("resume", resume_command, "let workers claim from a queue again", RESUME, [queue]),
        ("cancel", cancel_command, "cancel jobs that wait or run", CANCEL, [waiting]),
        ("schedules", schedules_command, "list each schedule's last and next run", SCHEDULES, [code]),
        ("workers", workers_command, "list the workers at work and those gone in the last hour", WORKERS, []),
        ("prepare", prepare_command, "make the tables, or bring them up to date", PREPARE, []),
        ("limit", limit_command, "limit a queue's rate, concurrency or jobs per key", LIMIT, limit),
        ("unlimit", unlimit_command, "lift a queue's limit", UNLIMIT, [queue]),
    ]


STATUS = (
    "Count each queue's jobs: due now, scheduled for later, in work, failed for good, how long the oldest due job "
    f"has been due, and whether the queue is paused. Past {shelf.STATUS_EXACT:,} jobs a count is an estimate, "
    "shown as ~N. Exits 0."
)
FAILED = (
    "List the jobs that failed for good, with their last reason (never their arguments). "
    "Exits 0 when there are none and 1 when there are, so a script can raise the alarm."
)
RETRY = (
    "Put failed jobs back in the queue, due at once, with their attempts counted from 0. "
    "Exits 0 when a job went back and 1 when none did."
)
DISCARD = "Delete failed jobs. Exits 0 when a job was deleted and 1 when none was."
PAUSE = (
    "Pause a queue: workers claim none of its jobs (within a poll interval) until it is resumed; "
    "jobs in hand finish. Exits 0, or 1 when it was paused already."
)
RESUME = "Resume a paused queue. Exits 0, or 1 when it was not paused."
CANCEL = (
    "Cancel jobs: one that waits goes on the failed shelf as cancelled and never runs; one that runs "
    "is shelved as cancelled by its worker within a poll interval, its writes undone, unless it is past "
    "its point of no return (a letter handed to its mail server): that one ends as it would have, and a "
    "success is done, not shelved. Exits 0, or 1 when none was waiting or running."
)
SCHEDULES = (
    "List each schedule recorded in the table with its last run and when a worker last held it; "
    "with --schedules, the code's definition and next run too. Exits 0."
)
WORKERS = (
    "List the workers at work and those gone within the last hour: host, pid, queues, threads, the schema "
    "version their code needs, when each started and last beat, and how many jobs each holds. Exits 0."
)
PREPARE = (
    "Make the jobs tables, or take the steps of their schema they lack, as their owner; "
    "once it has run, a role that may only SELECT, INSERT, UPDATE and DELETE can work and queue jobs."
)
LIMIT = (
    "Limit a queue, on every worker from its next claim, with no restart: --rate 14/1 lets 14 of its jobs "
    "start in any 1 s, --concurrency 4 lets 4 be in work at once, --per-key 2 lets 2 jobs of one concurrency "
    "key be in work at once. The limit given replaces the queue's limit: a part not given is lifted. Exits 0."
)
UNLIMIT = "Lift a queue's limit, on every worker from its next claim. Exits 0, or 1 when it had none."
PAGE_SAID = f"jobs on the page, newest first (default {shelf.PAGE})"


def queue_name(text: str) -> str:
    """A queue's name, for argparse: not empty, no NUL."""
    try:
        control.queue_named(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def positive(text: str) -> int:
    """A whole number from 1 to ID_MAX, for argparse: a job's id, or how many jobs a page holds."""
    if not text.isascii() or not text.isdigit() or len(text) > len(str(ID_MAX)) or not 1 <= int(text) <= ID_MAX:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {ID_MAX}, not {text!r}")
    return int(text)


def rate(text: str) -> tuple[int, float]:
    """A rate JOBS/SECONDS, for argparse: 14/1, 100/60, 1/0.5."""
    matched = RATE.fullmatch(text)
    if not matched:
        raise argparse.ArgumentTypeError(f"a rate is JOBS/SECONDS, such as 14/1, not {text!r}")
    return int(matched[1]), float(matched[2])


def retry_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
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
    for queue in control.paused_holding(db, None if args.all else args.ids) if back else []:
        print(f"queue {queue} is paused: its jobs wait until `python -m jobs resume {queue}`")
    return EXIT_OK if back else EXIT_NOTICE


def discard_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Deletes failed jobs, and says how many of those named were not on the shelf."""
    gone = shelf.discarded(db, *args.ids, every=args.all)
    print(f"{jobs_counted(gone)} discarded")
    if not args.all and gone < len(set(args.ids)):
        print(f"{jobs_counted(len(set(args.ids)) - gone)} not on the failed shelf")
    return EXIT_OK if gone else EXIT_NOTICE


def pause_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Pauses a queue, and says whether it was running."""
    return said(
        control.paused(db, args.queue),
        f"queue {args.queue} paused: workers claim none of its jobs until it is resumed",
        f"queue {args.queue} was paused already",
    )


def resume_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Resumes a queue, and says whether it was paused."""
    return said(control.resumed(db, args.queue), f"queue {args.queue} resumed", f"queue {args.queue} was not paused")


def said(changed: bool, done: str, unchanged: str) -> int:
    """Prints what a command changed, or that it changed nothing, and answers the exit code."""
    print(done if changed else unchanged)
    return EXIT_OK if changed else EXIT_NOTICE


def cancel_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Cancels jobs, and says of each whether it was waiting, running, or neither."""
    done = control.cancelled(db, *args.ids)
    for id in dict.fromkeys(args.ids):
        if id in done.shelved:
            print(f"job {id} was waiting: it will not run, and is on the failed shelf as cancelled")
        elif id in done.signalled:
            print(f"job {id} is running: {control.RUNNING_CANCELLED}")
        else:
            print(f"job {id} is neither waiting nor running: no such job, or on the failed shelf already")
    return EXIT_OK if done else EXIT_NOTICE


def prepare_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Makes or upgrades the tables, and says at which version they were and are."""
    before = schema.version(db)
    schema.prepared(db)
    print(f"jobs tables at version {schema.version(db)}" + (f" (were at {before})" if before < schema.VERSION else ""))
    return EXIT_OK


def limit_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Sets a queue's limit, and says it; a limit that makes no sense is refused as a wrong command line."""
    if args.rate is None and args.concurrency is None and args.per_key is None:
        args.usage("give --rate, --concurrency or --per-key (to lift a queue's limit: unlimit)")
    try:
        limit = limits.limited(db, args.queue, rate=args.rate, concurrency=args.concurrency, per_key=args.per_key)
    except ValueError as error:
        args.usage(str(error))  # exits EXIT_USAGE
    print(f"queue {args.queue} limited to {limit.said()}, from the next claim of every worker")
    return EXIT_OK


def unlimit_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Lifts a queue's limit, and says whether it had one."""
    return said(
        limits.unlimited(db, args.queue),
        f"queue {args.queue} is no longer limited, from the next claim of every worker",
        f"queue {args.queue} had no limit",
    )
