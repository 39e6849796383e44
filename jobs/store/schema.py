"""The queue's SQL: its named statements, read from the .sql files, and its tables, made and upgraded.

Each .sql file names its statements with a line `-- name: NAME`; the comment lines under it say why
the statement is shaped as it is and stay in the file, not in the string (`load`; store/'s modules
share one reading of queries.sql, `read_once`). Two words stand for the moment a statement works
at, so that every worker on every machine reads one clock, the database's: `{now}` is the caller's
%(now)s when it fixes one (tests, a caller's own loop) and else the statement's start, and
`{clock}` the same but read when the row is written (for a lease that must run from then).

`prepared` reads the version the database records in job_schema and, when it is
current (every start but the first after an upgrade), changes and locks nothing. Else
it takes the missing steps of schema.sql in order, each under LOCK_TIMEOUT and retried.
`Steps` does this for any numbered steps with a record table of their own: the
guestbook's tables are made the same way. It makes the tables of every part, those a copy may
leave out too (OPTIONAL, each found by `optional`), so a copy that takes one back finds them.
"""

import functools
import importlib
import logging
import time
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import psycopg
from psycopg import sql

R = TypeVar("R")  # a row, as the cursor's row factory makes it

# The words, and the SQL each stands for: integer ms since the epoch, rounded down as
# now_ms() rounds (a cast would round to the nearest, half a millisecond into a future
# that a caller's own clock has not reached).
MOMENTS = {
    "{now}": "COALESCE(%(now)s::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)",
    "{clock}": "COALESCE(%(now)s::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
}


def load(path: Path) -> dict[str, str]:
    """Maps each statement's name to its text, comments left out."""
    statements: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- name:"):
            lines = statements.setdefault(line.removeprefix("-- name:").strip(), [])
        elif not line.lstrip().startswith("--") and line.strip():
            lines.append(line)
    return {name: moments_written("\n".join(text)) for name, text in statements.items()}


@functools.cache
def read_once(path: Path) -> dict[str, str]:
    """`load(path)`, read once however many modules ask for it: the modules of store/ share its queries.sql."""
    return load(path)


def moments_written(text: str) -> str:
    """The statement with {now} and {clock} written out (see MOMENTS)."""
    for word, moment in MOMENTS.items():
        text = text.replace(word, moment)
    return text


def one(cursor: psycopg.Cursor[R]) -> R:
    """The row of a statement that always answers one (a count, an upsert's RETURNING); a LookupError if none came."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError(f"a statement that always answers a row answered none ({cursor.statusmessage})")
    return row


LOCK_TIMEOUT = 0.1  # seconds a step's statement waits for a lock before the step rolls back to try again
UPGRADE_PAUSE_FIRST = 0.1  # seconds before a step that timed out is tried again; doubles up to UPGRADE_PAUSE_MAX
UPGRADE_PAUSE_MAX = 5.0
UPGRADE_PATIENCE = 300.0  # seconds of retries after which `prepared` gives up and raises SchemaError
# The advisory lock that lets one process at a time take a step: two running CREATE TABLE
# IF NOT EXISTS side by side can fail on the catalogue's unique index, and both would
# record the step. Older copies of the package took the same key, so they take turns too.
UPGRADE_LOCK = 7468021459

OPTIONAL = ("limits", "schedules", "pulse")  # store/'s modules a copy of the package may leave out

statements = load(Path(__file__).with_name("schema.sql"))

log = logging.getLogger("jobs")
C = TypeVar("C", bound=psycopg.Connection[Any])  # the connection `prepared` answers, as it was given


def optional(module: str) -> ModuleType | None:
    """store/'s `module` (one of OPTIONAL), or None when a copy of the package left it out."""
    name = f"{__name__.rsplit('.', 1)[0]}.{module}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if missing.name != name:  # a module it imports is missing: not a part left out
            raise
        return None


class SchemaError(Exception):
    """The tables are behind this code's VERSION, and this process could not bring them up to it."""


def numbered(statements: dict[str, str]) -> dict[int, str]:
    """The statements named "step N", by N."""
    return {int(name.removeprefix("step ")): text for name, text in statements.items() if name.startswith("step ")}


class Steps:
    """Numbered steps that make and upgrade some tables, and the table that records which a database took.

    what: how the log and errors name the tables ("jobs tables"). steps: N -> the
    statements of step N, whose step 1 makes the `record` table (version integer
    PRIMARY KEY). lock: the advisory lock key upgraders of these tables take turns
    by. owner: what a role that may not change the tables should run instead.
    """

    def __init__(self, what: str, steps: dict[int, str], record: str, lock: int, owner: str) -> None:
        self.what, self.steps, self.record, self.lock, self.owner = what, steps, record, lock, owner
        self.needed = max(steps)  # the version this code needs: the number of its last step
        self._version = sql.SQL(statements["version"]).format(record=sql.Identifier(record))
        self._record = sql.SQL(statements["record"]).format(record=sql.Identifier(record))

    def prepared(self, db: C) -> C:
        """Takes the steps `db` lacks, if any; on a current database only reads the record (see `prepared`)."""
        if self.version(db) < self.needed:
            self.upgraded(db)
        return db

    def version(self, db: psycopg.Connection[Any]) -> int:
        """The last step this database has taken; 0 when it keeps no record."""
        with db.transaction():
            if not one(db.execute(statements["recorded"], {"record": self.record}))[0]:
                return 0
            taken: int = one(db.execute(self._version))[0]
            return taken

    def upgraded(self, db: psycopg.Connection[Any], target: int | None = None) -> int:
        """Takes the steps up to `target` (all) that `db` has not taken; returns the version (see `upgraded`)."""
        target = self.needed if target is None else target
        taken, pause = self.version(db), UPGRADE_PAUSE_FIRST
        deadline = time.monotonic() + UPGRADE_PATIENCE
        while taken < target:
            try:
                taken = self.stepped(db, taken + 1)
            except psycopg.errors.LockNotAvailable as error:
                if time.monotonic() + pause > deadline:
                    raise SchemaError(
                        f"step {taken + 1} of the {self.what} waited {UPGRADE_PATIENCE:g} s for "
                        f"other transactions' locks on them, and gave up: {error}"
                    ) from error
                log.warning(
                    "%s: step %s of %s waits for a lock another transaction holds; trying again in %.1f s",
                    self.what,
                    taken + 1,
                    self.needed,
                    pause,
                )
                time.sleep(pause)
                pause = min(pause * 2, UPGRADE_PAUSE_MAX)
            except psycopg.errors.InsufficientPrivilege as error:
                raise SchemaError(
                    f"the {self.what} are at version {taken} and this code needs {self.needed}, "
                    f"but this role may not change them ({error}); {self.owner}"
                ) from error
        return taken

    def stepped(self, db: psycopg.Connection[Any], step: int) -> int:
        """Takes one step unless another process took it first; returns the version now."""
        with db.transaction():
            db.execute(statements["lock_timeout"], {"timeout": f"{round(LOCK_TIMEOUT * 1000)}ms"})
            db.execute(statements["serialised"], {"key": self.lock})
            taken = self.version(db)  # read again under the lock: another process may have gone first
            if taken >= step:
                return taken
            db.execute(self.steps[step])
            db.execute(self._record, {"version": step})
        log.info("%s: took step %s of %s", self.what, step, self.needed)
        return step


STEPS = numbered(statements)
VERSION = max(STEPS)  # the schema this code needs: the number of the last step in schema.sql
TABLES = Steps(
    "jobs tables",
    STEPS,
    "job_schema",
    UPGRADE_LOCK,
    "run `python -m jobs prepare` once as their owner, or call jobs.prepared on an owner's connection",
)


def prepared(db: C) -> C:
    """Makes the queue's tables, or brings them up to VERSION, when they are behind; returns `db`.

    When the database is current it only reads job_schema (a catalogue look-up and
    one small table of its own), so it is cheap on every start, never waits on the
    app's transactions, and needs no privilege beyond SELECT: a role that may only
    SELECT, INSERT, UPDATE and DELETE can call it once an owner has run it. A newer
    version than VERSION (a later copy upgraded first) counts as current.

    When the tables are behind, see `upgraded`. Call it outside a transaction.
    """
    return TABLES.prepared(db)


def version(db: psycopg.Connection[Any]) -> int:
    """The last step of schema.sql this database has taken; 0 when it keeps no record."""
    return TABLES.version(db)


def upgraded(db: psycopg.Connection[Any], target: int = VERSION) -> int:
    """Takes the steps of schema.sql up to `target` that `db` has not taken; returns the version.

    Each step is one transaction whose statements wait at most LOCK_TIMEOUT for a
    lock: when another transaction holds one it needs (an app's transaction that
    queued a job and is still open, say), the step rolls back, is logged, and is tried
    again after a pause growing from UPGRADE_PAUSE_FIRST to UPGRADE_PAUSE_MAX. So the
    app's statements that queue behind a step's lock wait LOCK_TIMEOUT at the most.
    Raises SchemaError after UPGRADE_PATIENCE of that, or at once when this role may
    not change the tables, saying what to run instead.
    """
    return TABLES.upgraded(db, target)
