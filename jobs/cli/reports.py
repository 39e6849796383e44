"""The commands that look at the queue, `status`, `failed`, `schedules` and `workers`, and how they print.

Each prints a plain-text table (moments in UTC, ages as people read them), never a job's
arguments, and reasons as the runner wrote them, without the values of secret ones
(core/arguments.py); commands.py declares them and main.py runs them on their connection.
"""

import argparse
import importlib
from datetime import UTC, datetime
from typing import Any

import psycopg

from ..store import control, schedules, shelf
from ..store.shelf import age, has_limit, limit_said, runs

EXIT_OK = 0  # done; for `failed`, the shelf is empty
# `failed` found jobs on the shelf; `retry`, `discard`, `pause`, `resume`, `cancel` or `unlimit` changed nothing
EXIT_NOTICE = 1
MOMENT_FORMAT = "%Y-%m-%d %H:%M:%S"  # a moment as the tables print it, in UTC
REASON_WIDTH = 60  # characters of a reason the `failed` table shows; --full shows all of it
# The columns of `workers`, one per worker's field (worker_row gives them in this order).
WORKER_COLUMNS = [
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


def in_full(job: dict[str, Any]) -> str:
    """One failed job with every reason and its last traceback, for `failed --full`."""
    retries = job.get("retries") or []
    lines = [
        f"job {job['id']}: {job['name']} on {job['queue']}, failed for good at "
        f"{moment(job['failed_at'])} UTC after {job['attempts']} attempt(s)"
        + (f" of its run {len(retries) + 1} (retried from the shelf {times(len(retries))})" if retries else "")
    ]
    for run, reasons in enumerate(runs(job["reasons"], retries), 1):
        lines += [f"  {f'run {run}, ' if retries else ''}reason {n}: {reason}" for n, reason in enumerate(reasons, 1)]
    lines += ["  traceback of the last failure:" if job["traceback"] else "  no traceback"]
    lines += ["    " + line for line in job["traceback"].splitlines()]
    return "\n".join(lines)


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
    """Prints the workers at work and those gone within control.KEPT as a table."""
    rows = control.workers_listed(db)
    if not rows:
        print("no worker has run in the last hour")
        return EXIT_OK
    print(table(WORKER_COLUMNS, [worker_row(row) for row in rows]))
    return EXIT_OK


def worker_row(row: dict[str, Any]) -> list[Any]:
    """One worker's line of the `workers` table, in the order of WORKER_COLUMNS."""
    started, beat = moment(row["started_at"]), age((row["now"] - row["beat_at"]) / 1000) + " ago"
    return [
        row["id"],
        row["host"],
        row["pid"],
        ",".join(row["queues"]),
        row["threads"],
        row["version"],
        started,
        beat,
        row["state"],
        row["holding"],
    ]


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


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """Rows under their headers in plain-text columns, numbers aligned right."""
    right = [all(isinstance(row[n], int) or str(row[n]).startswith("~") for row in rows) for n in range(len(headers))]
    cells = [[str(value) for value in row] for row in [headers, *rows]]
    widths = [max(len(row[n]) for row in cells) for n in range(len(headers))]
    lines = [
        "  ".join(cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right, strict=True)).rstrip()
        for row in cells
    ]
    return "\n".join(lines)


def times(n: int) -> str:
    """How often, in words: once, twice, 3 times."""
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def moment(ms: int) -> str:
    """A moment in ms since the epoch, as a UTC date and time."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime(MOMENT_FORMAT)


def when(moment: datetime | None, none: str = "never") -> str:
    """A timestamptz as a UTC date and time, or `none`."""
    return none if moment is None else moment.astimezone(UTC).strftime(MOMENT_FORMAT)


def first_line(reason: str) -> str:
    """The first line of a reason, cut to REASON_WIDTH characters."""
    line = reason.splitlines()[0] if reason else ""
    return line if len(line) <= REASON_WIDTH else line[: REASON_WIDTH - 3] + "..."


def jobs_counted(n: int) -> str:
    """How many jobs, in words: "1 job", "2 jobs"."""
    return f"{n} job" if n == 1 else f"{n} jobs"
