"""The transaction of one job: its performer's writes and its settlement, committed together.

A job whose performer touches the connection gets a transaction of its own, begun the
first time it does; the runner (running.py) deletes or fails the job's row on that same
transaction and commits, so its writes and its settlement stand or fall together and
wait on no other job. A job that never touches the connection (it sends a letter, calls
an API) begins nothing and pays nothing: the runner settles it with its neighbours.
Whatever a job did to its session (SET, a session advisory lock, a temporary table,
LISTEN, a held cursor) is undone in the same round trip as its COMMIT or ROLLBACK
(`Cleaner`), so the next job gets the connection as the worker opened it.
"""

import functools
import re
import weakref
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql
from psycopg.abc import Query
from psycopg.pq import TransactionStatus

from ..core.job import Job
from .connections import Backend

FORBIDDEN = ("commit", "rollback", "close")  # what a performer may not do to the worker's connection
IDLE, INERROR = TransactionStatus.IDLE, TransactionStatus.INERROR  # libpq's, read often: looked up once
CHECKED_TEXTS = 512  # statement texts whose check for a transaction's end is remembered (most recent first)

# A statement that ends the job's transaction: COMMIT, END, ABORT, ROLLBACK (but not ROLLBACK
# TO a savepoint) and PREPARE TRANSACTION, at the start of the text or after a semicolon.
# Comments and quoted text are blanked out before the search (see `checked`).
ENDING = re.compile(
    r"(?:^|;)\s*(?:commit|end|abort|rollback(?!\s+(?:work\s+|transaction\s+)?to\b)|prepare\s+transaction)\b",
    re.IGNORECASE,
)
# What undoes a job's session state, after its transaction ends, as PgBouncer's DISCARD ALL
# does. SET SESSION AUTHORIZATION DEFAULT comes first: it gives back the user the connection
# logged in as, and with it no role (SET ROLE), which RESET ALL leaves alone. Then what the
# connect function made is made again, read once while the connection was as it left it
# (`cleaning`): its settings (source 'session' in pg_settings), then its session
# authorization and role.
CLEAN = (
    "SET SESSION AUTHORIZATION DEFAULT; RESET ALL; {settings}"
    "SELECT pg_advisory_unlock_all(); DISCARD TEMP; CLOSE ALL; UNLISTEN *"
)
# Added to CLEAN after a job whose statements hold a PREPARE: it deallocates the statements
# SQL's PREPARE made (from_sql) and keeps psycopg's, which its cache expects to find
# (DEALLOCATE ALL would drop them too, and psycopg notices that only the first time a text
# is sent). Only then: reading pg_prepared_statements costs about 50 µs, this loop 70.
DEALLOCATED = (
    "; DO $$DECLARE prepared text; BEGIN FOR prepared IN SELECT name FROM pg_prepared_statements WHERE from_sql "
    "LOOP EXECUTE format('DEALLOCATE %I', prepared); END LOOP; END$$"
)
SESSION_SETTINGS = (
    "SELECT coalesce(string_agg(format('SELECT set_config(%L, %L, false); ', name, setting), ''), '') "
    "|| CASE WHEN session_user = (SELECT usename FROM pg_stat_activity WHERE pid = pg_backend_pid()) THEN '' "
    "ELSE format('SET SESSION AUTHORIZATION %I; ', session_user) END "
    "|| CASE current_setting('role') WHEN 'none' THEN '' ELSE format('SET ROLE %I; ', current_setting('role')) END "
    "FROM pg_settings WHERE source = 'session'"
)
PREPARING = re.compile(r"(?:^|;)\s*prepare\s+(?!transaction\b)", re.IGNORECASE)  # SQL's PREPARE of a statement
QUOTED = re.compile(r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(\$[A-Za-z_0-9]*\$).*?\1", re.DOTALL)


_cleaning: "weakref.WeakKeyDictionary[psycopg.Connection[Any], str]" = weakref.WeakKeyDictionary()


def cleaning(db: psycopg.Connection[Any]) -> str:
    """The statements that put `db`'s session back as it was when first asked (CLEAN), read once per connection."""
    text = _cleaning.get(db)
    if text is None:
        settings = db.execute(SESSION_SETTINGS).fetchone()
        text = _cleaning[db] = CLEAN.format(settings=settings[0] if settings else "")
    return text


class JobTransaction:
    """One job's transaction on an autocommit connection, begun when its performer first uses it.

    `backend` (connections.py), when given, is told each time the transaction begins.
    Its own statements (begin, settle, end) go through `cursor`, one cursor of `db`
    that the runner keeps for all its jobs: a cursor made for each costs the worker
    more than sending the statement does. Its end cleans the session (`cleaning`),
    but behind a pooler, whose server sessions other clients share.
    """

    def __init__(
        self, db: psycopg.Connection[Any], backend: Backend | None = None, cursor: psycopg.Cursor[Any] | None = None
    ) -> None:
        self.db, self.backend = db, backend
        self.cursor = cursor if cursor is not None else db.cursor()
        self.begun = False
        self.prepared = False  # whether a statement of the job holds a PREPARE: its clean deallocates it
        self.ended: Job | None = None  # the job, once its performer has handed the connection back
        self._clean = "" if backend is not None and backend.pooled else None  # None: read at BEGIN

    def begin(self) -> None:
        """Begins the transaction, if nothing has yet; refused once the job ended (`handed_back`)."""
        if self.ended is not None:
            raise psycopg.ProgrammingError(
                f"job {self.ended.id} ({self.ended.name} on {self.ended.queue}) has ended: the connection it was "
                "handed takes no more statements (a task or thread it left running sent this one)"
            )
        if not self.begun:
            if self._clean is None:
                self._clean = cleaning(self.db)
            self.cursor.execute("BEGIN")
            self.begun = True
            self._entered()

    def _entered(self) -> None:
        if self.backend is not None:
            self.backend.entered(self.db)

    def committed(self) -> None:
        """Commits, and cleans the session in the same round trip; a refused COMMIT raises, rolled back."""
        if self.begun:
            self.begun = False  # a COMMIT the server refuses ends the transaction too: it is rolled back
            try:
                self.cursor.execute(self._ended("COMMIT"))
            except psycopg.Error:
                if not (self.db.broken or self.db.closed) and self._clean:
                    self.cursor.execute(self._clean + self._deallocating())
                raise

    def rolled_back(self) -> None:
        """Rolls the transaction back and cleans the session, unless the connection is gone (the server has)."""
        if self.begun and not (self.db.broken or self.db.closed):
            self.cursor.execute(self._ended("ROLLBACK"))
        self.begun = False

    def _ended(self, end: str) -> str:
        return f"{end}; {self._clean}{self._deallocating()}" if self._clean else end

    def _deallocating(self) -> str:
        """DEALLOCATED once the job sent a PREPARE, which it forgets; "" otherwise."""
        prepared, self.prepared = self.prepared, False
        return DEALLOCATED if prepared else ""

    def for_job(self) -> "Touched":
        """The connection to hand the performer."""
        return Touched(self)

    def handed_back(self, job: Job) -> None:
        """Hears that `job`'s performer returned: the connection it was handed refuses all use from now on."""
        self.ended = job

    def left_failed(self) -> bool:
        """Whether the performer left its transaction failed (a statement error it swallowed)."""
        return self.begun and self.db.pgconn.transaction_status == INERROR

    def left_ended(self) -> bool:
        """Whether the performer ended its transaction by a way the worker could not refuse."""
        return self.begun and self.db.pgconn.transaction_status == IDLE


@functools.lru_cache(maxsize=CHECKED_TEXTS)
def text_ends_transaction(text: str) -> bool:
    """Whether a text ends a transaction; a performer sends the same few texts again and again: each is read once."""
    return ENDING.search(QUOTED.sub(" ", text)) is not None


@functools.lru_cache(maxsize=CHECKED_TEXTS)
def text_prepares(text: str) -> bool:
    """Whether a text holds SQL's PREPARE of a statement (not PREPARE TRANSACTION), read once as above."""
    return PREPARING.search(QUOTED.sub(" ", text)) is not None


class Touched:
    """Stands for the worker's connection in a performer; any use of it begins the job's transaction.

    Everything a performer does with it (execute, cursor, transaction, ...) goes to
    the real psycopg connection; `.connection` is that connection, for code that needs
    the object itself. Committing, rolling back or closing it is refused, and so is a
    statement that would do the same (COMMIT, ROLLBACK, END, ABORT, PREPARE
    TRANSACTION): the job's writes commit with its settlement, or not at all. Once the
    performer has returned (`JobTransaction.handed_back`), any use of it is refused.
    """

    def __init__(self, transaction: JobTransaction) -> None:
        self._transaction = transaction

    @property
    def connection(self) -> psycopg.Connection[Any]:
        self._transaction.begin()
        return self._transaction.db

    def execute(self, query: Query, *args: Any, **kwargs: Any) -> psycopg.Cursor[Any]:
        checked(query, self._transaction)
        self._transaction.begin()
        return self._transaction.db.execute(query, *args, **kwargs)

    def cursor(self, *args: Any, **kwargs: Any) -> "GuardedCursor":
        self._transaction.begin()
        return GuardedCursor(self._transaction.db.cursor(*args, **kwargs), self._transaction)

    def __getattr__(self, name: str) -> Any:
        if name in FORBIDDEN:
            raise psycopg.ProgrammingError(
                f"a performer may not {name} the worker's connection: its writes commit with its job's settlement"
            )
        self._transaction.begin()
        return getattr(self._transaction.db, name)


class GuardedCursor:
    """A cursor of the worker's connection that refuses the statements that would end the job's transaction."""

    def __init__(self, cursor: psycopg.Cursor[Any], transaction: JobTransaction) -> None:
        self._cursor, self._transaction = cursor, transaction

    def execute(self, query: Query, *args: Any, **kwargs: Any) -> "GuardedCursor":
        checked(query, self._transaction)
        self._transaction.begin()  # refused once the job ended, as a statement through Touched is
        self._cursor.execute(query, *args, **kwargs)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def __enter__(self) -> "GuardedCursor":
        self._cursor.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        return self._cursor.__exit__(*exc)


def checked(query: Query, transaction: JobTransaction) -> None:
    """Raises ProgrammingError, sending nothing, when `query` would end the job's transaction; notes a PREPARE.

    A text, bytes or a psycopg sql object (read as the text it makes) is checked.
    """
    text = query.as_string(transaction.db) if isinstance(query, sql.Composable) else query
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    if not isinstance(text, str):
        return
    if text_prepares(text):
        transaction.prepared = True
    if text_ends_transaction(text):
        raise psycopg.ProgrammingError(
            "a performer may not end the worker's transaction (COMMIT, ROLLBACK, END, "
            "ABORT, PREPARE TRANSACTION): its writes commit with its job's settlement"
        )
