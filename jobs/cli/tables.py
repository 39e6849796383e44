"""How the command line prints: plain-text tables, moments in UTC, ages as people read them.

The commands (commands.py) print what they found with these, and never a job's arguments.
"""

from datetime import UTC, datetime
from typing import Any

REASON_WIDTH = 60  # characters of a reason the `failed` table shows; --full shows all of it


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


def has_limit(queue: dict[str, Any]) -> bool:
    """Whether a queue of status has a limit."""
    return any(queue[limit] is not None for limit in ("limit_rate", "limit_concurrency", "limit_per_key"))


def limit_said(queue: dict[str, Any]) -> str:
    """A queue's limit as status shows it, and what is used of it: "14 a 1 s (3 used), 2 at once (2 in work)"."""
    parts = []
    if queue["limit_rate"] is not None:
        parts.append(f"{queue['limit_rate']} a {queue['limit_per_ms'] / 1000:g} s ({queue['limit_used']} used)")
    if queue["limit_concurrency"] is not None:
        parts.append(f"{queue['limit_concurrency']} at once ({queue['in_work']} in work)")
    if queue["limit_per_key"] is not None:
        parts.append(f"{queue['limit_per_key']} a key")
    return ", ".join(parts) or "-"


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


def runs(reasons: list[str], retries: list[int]) -> list[list[str]]:
    """A job's reasons split by run: `retries` holds how many reasons it had at each retry from the shelf."""
    starts = [0, *retries, len(reasons)]
    return [reasons[begin:end] for begin, end in zip(starts, starts[1:], strict=False)]


def times(n: int) -> str:
    """How often, in words: once, twice, 3 times."""
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def moment(ms: int) -> str:
    """A moment in ms since the epoch, as a UTC date and time."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def when(moment: datetime | None, none: str = "never") -> str:
    """A timestamptz as a UTC date and time, or `none`."""
    return none if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


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
