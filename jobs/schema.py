"""Making and upgrading the queue's tables, without holding up the app that uses them.

`prepared` reads the version the database records in job_schema and, when it is
current (every start but the first after an upgrade), changes and locks nothing. Else
it takes the missing steps of schema.sql in order, each under LOCK_TIMEOUT and retried.
"""

import logging
import time
from pathlib import Path

import psycopg

from .sql import load

LOCK_TIMEOUT = 0.1  # seconds a step's statement waits for a lock before the step rolls back to try again
UPGRADE_PAUSE_FIRST = 0.1  # seconds before a step that timed out is tried again; doubles up to UPGRADE_PAUSE_MAX
UPGRADE_PAUSE_MAX = 5.0
UPGRADE_PATIENCE = 300.0  # seconds of retries after which `prepared` gives up and raises SchemaError
# The advisory lock that lets one process at a time take a step: two running CREATE TABLE
# IF NOT EXISTS side by side can fail on the catalogue's unique index, and both would
# record the step. Older copies of the package took the same key, so they take turns too.
UPGRADE_LOCK = 7468021459

statements = load(Path(__file__).with_name("schema.sql"))
STEPS = {int(name.removeprefix("step ")): text for name, text in statements.items() if name.startswith("step ")}
VERSION = max(STEPS)  # the schema this code needs: the number of the last step in schema.sql

log = logging.getLogger("jobs")


class SchemaError(Exception):
    """The tables are behind this code's VERSION, and this process could not bring them up to it."""


def prepared(db):
    """Makes the queue's tables, or brings them up to VERSION, when they are behind; returns `db`.

    When the database is current it only reads job_schema (a catalogue look-up and
    one small table of its own), so it is cheap on every start, never waits on the
    app's transactions, and needs no privilege beyond SELECT: a role that may only
    SELECT, INSERT, UPDATE and DELETE can call it once an owner has run it. A newer
    version than VERSION (a later copy upgraded first) counts as current.

    When the tables are behind, see `upgraded`. Call it outside a transaction.
    """
    if version(db) < VERSION:
        upgraded(db)
    return db


def version(db) -> int:
    """The last step of schema.sql this database has taken; 0 when it keeps no record."""
    with db.transaction():
        if not db.execute(statements["recorded"]).fetchone()[0]:
            return 0
        return db.execute(statements["version"]).fetchone()[0]


def upgraded(db, target: int = VERSION) -> int:
    """Takes the steps of schema.sql up to `target` that `db` has not taken; returns the version.

    Each step is one transaction whose statements wait at most LOCK_TIMEOUT for a
    lock: when another transaction holds one it needs (an app's transaction that
    queued a job and is still open, say), the step rolls back, is logged, and is tried
    again after a pause growing from UPGRADE_PAUSE_FIRST to UPGRADE_PAUSE_MAX. So the
    app's statements that queue behind a step's lock wait LOCK_TIMEOUT at the most.
    Raises SchemaError after UPGRADE_PATIENCE of that, or at once when this role may
    not change the tables, saying what to run instead.
    """
    taken, pause = version(db), UPGRADE_PAUSE_FIRST
    deadline = time.monotonic() + UPGRADE_PATIENCE
    while taken < target:
        try:
            taken = stepped(db, taken + 1)
        except psycopg.errors.LockNotAvailable as error:
            if time.monotonic() + pause > deadline:
                raise SchemaError(f"step {taken + 1} of the jobs tables waited {UPGRADE_PATIENCE:g} s for "
                                  f"other transactions' locks on them, and gave up: {error}") from error
            log.warning("jobs tables: step %s of %s waits for a lock another transaction holds; "
                        "trying again in %.1f s", taken + 1, VERSION, pause)
            time.sleep(pause)
            pause = min(pause * 2, UPGRADE_PAUSE_MAX)
        except psycopg.errors.InsufficientPrivilege as error:
            raise SchemaError(f"the jobs tables are at version {taken} and this code needs {VERSION}, but "
                              f"this role may not change them ({error}); run `python -m jobs prepare` once "
                              f"as their owner, or call jobs.prepared on an owner's connection") from error
    return taken


def stepped(db, step: int) -> int:
    """Takes one step unless another process took it first; returns the version now."""
    with db.transaction():
        db.execute(statements["lock_timeout"], {"timeout": f"{round(LOCK_TIMEOUT * 1000)}ms"})
        db.execute(statements["serialised"], {"key": UPGRADE_LOCK})
        taken = version(db)  # read again under the lock: another process may have gone first
        if taken >= step:
            return taken
        db.execute(STEPS[step])
        db.execute(statements["record"], {"version": step})
    log.info("jobs tables: took step %s of %s", step, VERSION)
    return step
