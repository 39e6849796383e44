"""The command line's look at the queue and its hand on it: every command but `work`.

`python -m jobs` (cli/main.py) parses the command line and opens the connection; each
function here runs one command on it, prints plain tables (never a job's arguments,
and reasons the runner wrote without the values of secret ones: redaction.py) and
answers the exit code.
"""

import argparse
import importlib
from collections.abc import Callable
from typing import Any, TypeAlias

import psycopg

from ..store import control, schedules, schema, shelf, workers_table
from .tables import age, first_line, has_limit, in_full, jobs_counted, limit_said, moment, table, when

EXIT_OK = 0  # done; for `failed`, the shelf is empty
# `failed` found jobs on the shelf; `retry`, `discard`, `pause`, `resume`, `cancel` or `unlimit` changed nothing
EXIT_NOTICE = 1
ID_MAX = 2**63 - 1  # the largest job id the table can hold (bigint)

# What add_subparsers() answers; in quotes, as the class takes no type argument at run time.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Command = Callable[
    [argparse.Namespace, psycopg.Connection[Any]], int
]  # a command: its arguments and connection to its exit code


def commands_added(commands: Commands) -> None:
    """Adds every command but `work` to the command line's commands."""
    shelf_commands_added(commands)
    control_commands_added(commands)
    listing = commands.add_parser(
        "schedules",
        help="list each schedule's last and next run",
        description=(
            "List each schedule recorded in the table with its last run and when a worker last held it; "
            "with --schedules, the code's definition and next run too. Exits 0."
        ),
    )
    listing.add_argument("--schedules", metavar="MODULE:ATTRIBUTE", help="the code's schedules, for their next runs")
    listing.set_defaults(command=schedules_command)
    listed = commands.add_parser(
        "workers",
        help="list the workers at work and those gone in the last hour",
        description=(
            "List the workers at work and those gone within the last hour: host, pid, queues, threads, the schema "
            "version their code needs, when each started and last beat, and how many jobs each holds. Exits 0."
        ),
    )
    listed.set_defaults(command=workers_command)
    prepare = commands.add_parser(
        "prepare",
        help="make the tables, or bring them up to date",
        description=(
            "Make the jobs tables, or take the steps of their schema they lack, as their owner; "
            "once it has run, a role that may only SELECT, INSERT, UPDATE and DELETE can work and queue jobs."
        ),
    )
    prepare.set_defaults(command=prepare_command)


def shelf_commands_added(commands: Commands) -> None:
    """Adds status, failed, retry and discard to the command line's commands."""
    status = commands.add_parser(
        "status",
        help="count each queue's jobs by state",
        description=(
            "Count each queue's jobs: due now, scheduled for later, in work, failed for good, "
            "how long the oldest due job has been due, and whether the queue is paused. "
            f"Past {shelf.STATUS_EXACT:,} jobs a count is an estimate, shown as ~N. Exits 0."
        ),
    )
    status.set_defaults(command=status_command)
    failed = commands.add_parser(
        "failed",
        help="list the jobs that failed for good",
        description=(
            "List the jobs that failed for good, with their last reason (never their arguments). "
            "Exits 0 when there are none and 1 when there are, so a script can raise the alarm."
        ),
    )
    failed.add_argument("--queue", metavar="QUEUE", help="only the jobs of this queue")
    failed.add_argument("--full", action="store_true", help="every reason and the last traceback of each job")
    failed.add_argument(
        "--limit",
        type=positive,
        default=shelf.PAGE,
        metavar="N",
        help=f"jobs on the page, newest first (default {shelf.PAGE})",
    )
    failed.add_argument("--after", type=positive, metavar="ID", help="the page after the one that ended with job ID")
    failed.set_defaults(command=failed_command)
    for chosen in (
        added(
            commands,
            "retry",
            retry_command,
            "put failed jobs back in the queue",
            "Put failed jobs back in the queue, due at once, with their attempts counted from 0. "
            "Exits 0 when a job went back and 1 when none did.",
        ),
        added(
            commands,
            "discard",
            discard_command,
            "delete failed jobs",
            "Delete failed jobs. Exits 0 when a job was deleted and 1 when none was.",
        ),
    ):
        chosen.add_argument("ids", nargs="*", type=positive, metavar="ID", help="a job on the failed shelf")
        chosen.add_argument("--all", action="store_true", help="every job on the failed shelf")


def added(commands: Commands, name: str, run: Command, summary: str, description: str) -> argparse.ArgumentParser:
    """A new command `name` that runs `run`; `usage` lets the command refuse its arguments as argparse would."""
    parser = commands.add_parser(name, help=summary, description=description)
    parser.set_defaults(command=run)
    parser.set_defaults(usage=parser.error)
    return parser


def control_commands_added(commands: Commands) -> None:
    """Adds pause, resume and cancel to the command line's commands."""
    added(
        commands,
        "pause",
        pause_command,
        "stop the claims of a queue",
        "Pause a queue: workers claim none of its jobs (within a poll interval) until it is resumed; "
        "jobs in hand finish. Exits 0, or 1 when it was paused already.",
    ).add_argument("queue", metavar="QUEUE", type=queue_name)
    added(
        commands,
        "resume",
        resume_command,
        "let workers claim from a queue again",
        "Resume a paused queue. Exits 0, or 1 when it was not paused.",
    ).add_argument("queue", metavar="QUEUE", type=queue_name)
    cancel = commands.add_parser(
        "cancel",
        help="cancel jobs that wait or run",
        description=(
            "Cancel jobs: one that waits goes on the failed shelf as cancelled and never runs; one that runs "
            "is shelved as cancelled by its worker within a poll interval, its writes undone, unless it is past "
            "its point of no return (a letter handed to its mail server): that one ends as it would have, and a "
            "success is done, not shelved. Exits 0, or 1 when none was waiting or running."
        ),
    )
    cancel.add_argument("ids", nargs="+", type=positive, metavar="ID", help="a job that waits or runs")
    cancel.set_defaults(command=cancel_command)


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


def status_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Prints each queue's figures as a table."""
    figures = shelf.status(db)
    if not figures:
        print("no jobs")
        return EXIT_OK
    rows = [
        [
            q["queue"],
            *(counted(q, state) for state in ("due", "scheduled", "in_work", "failed")),
            age(q["oldest_due_age"]),
            "yes" if q["paused"] else "no",
        ]
        for q in figures
    ]
    headers = ["QUEUE", "DUE", "SCHEDULED", "IN WORK", "FAILED", "OLDEST DUE", "PAUSED"]
    if any(has_limit(q) for q in figures):  # the columns of limits show once a queue has one
        headers += ["LIMIT", "HELD BACK"]
        rows = [[*row, limit_said(q), q["held_back"]] for row, q in zip(rows, figures, strict=True)]
    print(table(headers, rows))
    if any(q["estimated"] for q in figures):
        print(f"~ an estimate: past {shelf.STATUS_EXACT:,} jobs, counts come from the indexes' sizes")
    return EXIT_OK


def counted(queue: dict[str, Any], state: str) -> int | str:
    """A queue's count of `state` as the table shows it: the number, or "~N" for an estimate."""
    return f"~{queue[state]}" if state in queue["estimated"] else queue[state]


def failed_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Prints a page of the failed shelf as a table, or each job in full, and the total; exits EXIT_NOTICE when it
    holds jobs."""
    shelved = shelf.failed(db, args.queue, limit=args.limit, after=args.after)
    if not shelved:
        where = f" on queue {args.queue}" if args.queue else ""
        print(
            f"no job failed for good before job {args.after}{where}"
            if args.after
            else f"no job has failed for good{where}"
        )
        return EXIT_NOTICE if args.after else EXIT_OK
    if args.full:
        print("\n\n".join(in_full(job) for job in shelved))
    else:
        rows = [
            [j["id"], j["queue"], j["name"], j["attempts"], moment(j["failed_at"]), first_line(j["failure"])]
            for j in shelved
        ]
        print(table(["ID", "QUEUE", "NAME", "ATTEMPTS", "FAILED AT (UTC)", "LAST REASON"], rows))
    print(page_said(db, args, shelved))
    return EXIT_NOTICE


def page_said(db: psycopg.Connection[Any], args: argparse.Namespace, shelved: list[dict[str, Any]]) -> str:
    """The line under a page of the shelf: how many of how many, and how to ask for the next page."""
    figures = [q for q in shelf.status(db) if args.queue in (None, q["queue"])]
    total = sum(q["failed"] for q in figures)
    about = "~" if any("failed" in q["estimated"] for q in figures) else ""
    line = f"{jobs_counted(len(shelved))} of {about}{total} failed for good, newest first"
    if len(shelved) == args.limit:
        line += f"; the next page: --after {shelved[-1]['id']}"
    return line


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


def schedules_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Prints each schedule's last run, last sighting and, given the code's schedules, next run."""
    given = imported(args.schedules, "--schedules") if args.schedules else None
    rows = schedules.recorded(db, given)
    if not rows:
        print("no schedules recorded")
        return EXIT_OK
    headers = ["KEY", "SCHEDULE", "LAST RUN (UTC)", "LAST SEEN (UTC)"] + (["NEXT RUN (UTC)"] if given else [])
    table_rows = [
        [row["key"], row["definition"], when(row["last_tick"]), when(row["seen_at"])]
        + ([when(row.get("next_tick"), "not in the code")] if given else [])
        for row in rows
    ]
    print(table(headers, table_rows))
    return EXIT_OK


def workers_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Prints the workers at work and those gone within workers_table.KEPT as a table."""
    rows = workers_table.listed(db)
    if not rows:
        print("no worker has run in the last hour")
        return EXIT_OK
    headers = [
        "WORKER",
        "HOST",
        "PID",
        "QUEUES",
        "THREADS",
        "VERSION",
        "STARTED (UTC)",
        "LAST BEAT",
        "STATE",
        "HOLDING",
    ]
    print(
        table(
            headers,
            [
                [
                    row["id"],
                    row["host"],
                    row["pid"],
                    ",".join(row["queues"]),
                    row["threads"],
                    row["version"],
                    moment(row["started_at"]),
                    age((row["now"] - row["beat_at"]) / 1000) + " ago",
                    row["state"],
                    row["holding"],
                ]
                for row in rows
            ],
        )
    )
    return EXIT_OK


def imported(spec: str, option: str = "--performers") -> Any:
    """The object `module:attribute` names; a SystemExit saying what is wrong when it cannot be found."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise SystemExit(f"jobs: {option} takes module:attribute, got {spec!r}")
    try:
        return getattr(importlib.import_module(module), attribute)
    except ImportError as error:
        raise SystemExit(f"jobs: {option} {spec}: cannot import {module} ({error})") from None
    except AttributeError:
        raise SystemExit(f"jobs: {option} {spec}: module {module} has no {attribute}") from None
