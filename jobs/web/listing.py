"""The dashboard's lists of jobs by state: a page of the due, scheduled, in-work or failed jobs, filtered.

Each state is walked in the order of its own partial index (lists.sql) from a keyset
that the page's address carries, so a page costs the same however many jobs lie beside
it. The filters by name, worker and argument's value read a bounded walk of WALK_MAX
jobs: a page that ran out of walk before it was full says so, and where to go on.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..store.schema import load
from ..store.shelf import planned_without_jit  # a walk's plan is priced above what it costs, as status's is

statements = load(Path(__file__).with_name("lists.sql"))
# Each state and its keyset: the columns of its order, in the order of its index.
KEYS = {
    "due": ("priority", "run_at", "id"),  # the claim's order: the next to run first
    "scheduled": ("run_at", "id"),  # the soonest first
    "in_work": ("id",),  # the oldest first
    "failed": ("id",),  # newest first, as the shelf
}
STATE_NAMES = {"due": "Due", "scheduled": "Scheduled", "in_work": "In work", "failed": "Failed"}
PAGE = 50  # jobs a page of a list holds unless its address says otherwise
WALK_MAX = 5_000  # jobs a filtered page walks at most, in its state's order, looking for matches
# Where each key's walk starts on a first page: before every value a column can hold
# (priority is a smallint); the shelf is read newest first, from after the largest id.
START = {"priority": -(2**15) - 1, "run_at": -(2**63), "id": 0}
SHELF_START = 2**63 - 1


@dataclass
class Filters:
    """What a list shows: a state, and the jobs of it that match every filter given (None: any)."""

    state: str = "due"
    queue: str | None = None
    name: str | None = None
    worker: int | None = None
    value: str | None = None  # an argument's value, matched on its text; never a secret argument's

    def narrowing(self) -> bool:
        """Whether a filter beyond the state and the queue is given: the walk then reads up to WALK_MAX jobs."""
        return any(given is not None for given in (self.name, self.worker, self.value))


@dataclass
class Listing:
    """A page of a list: its jobs, and where the next page starts (None: this is the last)."""

    jobs: list[dict[str, Any]]
    next: tuple[int, ...] | None
    walked: int  # jobs the walk read for this page
    ran_out: bool  # the walk stopped at WALK_MAX before the page was full: `next` goes on searching


def listed(
    db: psycopg.Connection[Any], filters: Filters, after: tuple[int, ...] | None, limit: int, now: int
) -> Listing:
    """The page of `limit` jobs of `filters.state` that match `filters`, after the keyset `after` (None: the first)."""
    keys = KEYS[filters.state]
    walk = WALK_MAX if filters.narrowing() else limit
    statement = sql.SQL(statements["page"]).format(
        walk=walk_of(filters, walk), limit=sql.Literal(limit), matches=sql.SQL(statements["matches"])
    )
    with planned_without_jit(db), db.cursor(row_factory=dict_row) as cursor:
        rows = cursor.execute(statement, parameters(filters, after, now)).fetchall()
    found = [row for row in rows if row["found"]]
    last = [row for row in rows if not row["found"]]
    walked = last[0]["walked"] if last else 0
    if len(found) == limit:
        return Listing(found, key(found[-1], keys), walked, False)
    if walked == walk and last:
        return Listing(found, key(last[0], keys), walked, True)
    return Listing(found, None, walked, False)


def key(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[int, ...]:
    """The keyset of `row`: the values of its state's order."""
    return tuple(row[column] for column in keys)


def counted(db: psycopg.Connection[Any], filters: Filters, walk: int, now: int) -> tuple[int, int]:
    """How many of the first `walk` jobs of the list match its filters, and how many it walked (up to `walk`)."""
    statement = sql.SQL(statements["counted"]).format(
        walk=walk_of(filters, walk), matches=sql.SQL(statements["matches"])
    )
    with planned_without_jit(db), db.cursor() as cursor:
        matched, walked = cursor.execute(statement, parameters(filters, None, now)).fetchone() or (0, 0)
    return matched, walked


# The entries of each state whose walk on every queue names the queues first (lists.sql's queues).
ENTRIES = {"due": "ready", "scheduled": "scheduled_entry"}


def walk_of(filters: Filters, walk: int) -> sql.Composed:
    """The walk of the list's state over `walk` jobs: on one queue, or on every queue (merged by the statement)."""
    everywhere = filters.queue is None and filters.state != "in_work"
    given: dict[str, sql.Composable] = {"walk": sql.Literal(walk)}
    if everywhere and filters.state in ENTRIES:
        given["queues"] = sql.SQL(statements["queues"]).format(entry=sql.SQL(statements[ENTRIES[filters.state]]))
    return sql.SQL(statements[f"{filters.state}_everywhere" if everywhere else filters.state]).format(**given)


def parameters(filters: Filters, after: tuple[int, ...] | None, now: int) -> dict[str, object]:
    """The statements' parameters: the keyset to walk after (a first page's start when None) and the filters."""
    start = dict(START, id=SHELF_START) if filters.state == "failed" else START
    given = dict(zip(KEYS[filters.state], after, strict=True)) if after else {}
    keyset = {f"after_{key}": given.get(key, start[key]) for key in START}
    return keyset | {
        "queue": filters.queue,
        "name": filters.name,
        "worker": filters.worker,
        "value": filters.value,
        "now": now,
    }
