"""Queueing: `later` and `later_many` write jobs as rows, on the transaction an app already holds, whatever holds it.

Besides a psycopg Connection they take the connection under a SQLAlchemy Session
(Flask-SQLAlchemy's `db.session` too) or Connection on the psycopg 3 driver
(`postgresql+psycopg://`), and Django's `connection` on its PostgreSQL backend, which
is psycopg 3 from Django 4.2 on (`psycopg_of`): the job is written on that session's
transaction, and commits or rolls back with the app's own rows. On a psycopg
AsyncConnection they answer a coroutine, `await jobs.later(aconn, ...)`, with the same
checks before anything is sent (core/arguments.py). Neither SQLAlchemy nor Django is
imported: each is told by the module of its connection's type, so jobs still needs psycopg alone.
"""

import contextlib
import inspect
import json
from collections.abc import Coroutine, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import psycopg

from ..core import arguments
from ..core.job import ATTEMPTS
from .schema import one, read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

SQLALCHEMY = "sqlalchemy."  # the start of the module of every SQLAlchemy type
DJANGO = "django."  # the start of the module of Django's connection types (`connection` is a proxy of one)
# The options `later` and `later_many` take by keyword, and their defaults.
OPTIONS: dict[str, Any] = {"priority": 0, "unique": None, "key": None, "batch": None, "flow": None, "secret": None}
MANY_OPTIONS: dict[str, Any] = {"priority": 0, "secret": None}


@overload
def later(
    db: psycopg.AsyncConnection[Any], queue: str, name: str, args: dict[str, Any], at: int | None = None, **options: Any
) -> Coroutine[Any, Any, int | None]: ...
@overload
def later(
    db: psycopg.Connection[Any] | Any,
    queue: str,
    name: str,
    args: dict[str, Any],
    at: int | None = None,
    **options: Any,
) -> int | None: ...
def later(db: Any, queue: str, name: str, args: dict[str, Any], at: int | None = None, **options: Any) -> Any:
    """Queues job `name` with `args` on `queue` to run at `at` (ms since the epoch) or after.

    With `at` None it is due at once, by the database's clock; a later `at` waits
    out of the claim's index until a worker promotes it.

    The row is written on `db`'s current transaction (see the module's header for what
    `db` may be): if it rolls back, the job never existed, and the transaction that saves
    a record can be the one that queues its job. A worker listening for jobs is woken when
    that transaction commits. Returns the job's id; a coroutine answering it on an
    AsyncConnection. Refuses an empty queue or name and arguments that are not plain JSON
    (see `arguments.encoded`) with a ValueError or TypeError, writing nothing.

    priority: among due jobs, a lower number runs first (default 0).
    unique: at most one job per unique key waits or runs; when one already does,
    nothing is queued and the answer is None.
    key: a concurrency key; jobs sharing one run one at a time across all workers.
    secret: the names of the arguments that are secrets (a token, a letter's body with
    its links): no viewer shows them, and a failure's reason and traceback are written
    without their values (core/arguments.py). A name that is not an argument is a ValueError.
    batch and flow are written by `flows` for the jobs of batches and chains.
    """
    if isinstance(db, psycopg.AsyncConnection):
        return later_async(db, queue, name, args, at, options)
    connection = psycopg_of(db)
    params = later_params(queue, name, args, at, options)
    row = connection.execute(queries["later"], params).fetchone()
    return None if row is None else row[0]


async def later_async(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    args: dict[str, Any],
    at: int | None,
    options: dict[str, Any],
) -> int | None:
    """`later` on an AsyncConnection: the same statement, checked the same way before it is sent."""
    params = later_params(queue, name, args, at, options)
    cursor = await db.execute(queries["later"], params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


def later_params(
    queue: str, name: str, args: dict[str, Any], at: int | None, options: dict[str, Any]
) -> dict[str, Any]:
    """The parameters of statement `later` for one job, checked (ValueError, TypeError) before anything is sent."""
    given = OPTIONS | options_checked(options, OPTIONS, "later")
    return {
        "queue": queue,
        "name": name,
        "args": arguments.encoded(queue, name, args),
        "run_at": at,
        "now": None,
        "priority": given["priority"],
        "max_attempts": ATTEMPTS,
        "key": given["key"],
        "unique": given["unique"],
        "batch": given["batch"],
        "flow": None if given["flow"] is None else json.dumps(given["flow"]),
        "secret": arguments.declared(name, args, given["secret"]),
    }


def options_checked(options: dict[str, Any], known: dict[str, Any], function: str) -> dict[str, Any]:
    """`options` when each is one of `known`; a TypeError naming the first that is not, as Python's own says it."""
    if not options.keys() <= known.keys():
        unknown = sorted(options.keys() - known.keys())
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    return options


@overload
def later_many(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    **options: Any,
) -> Coroutine[Any, Any, int]: ...
@overload
def later_many(
    db: psycopg.Connection[Any] | Any,
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    **options: Any,
) -> int: ...
def later_many(
    db: Any, queue: str, name: str, many_args: Iterable[dict[str, Any]], at: int | None = None, **options: Any
) -> Any:
    """Queues job `name` once for each dict in `many_args`, in one COPY; returns how many (a coroutine answering it
    on an AsyncConnection).

    Every argument is checked before anything is written, so one bad dict refuses
    them all; `secret` names the secret arguments of every one of them, and `priority`
    is theirs, as `later`'s are. Written on `db`'s current transaction (one of its own on an
    autocommit connection), with one notification for all of them.
    """
    if isinstance(db, psycopg.AsyncConnection):
        return later_many_async(db, queue, name, many_args, at, options)
    connection = psycopg_of(db)
    many = Many.checked(queue, name, many_args, at, options)
    with connection.transaction() if connection.autocommit else contextlib.nullcontext(), connection.cursor() as cursor:
        now = one(cursor.execute(queries["now"], {"now": None}))[0]
        with cursor.copy(queries["later_many"]) as copy:
            for row in many.rows(now):
                copy.write_row(row)
        cursor.execute(queries["notify"], {"queue": queue})
    return len(many.jobs)


async def later_many_async(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None,
    options: dict[str, Any],
) -> int:
    """`later_many` on an AsyncConnection: one COPY, on a transaction of its own if `db` is autocommit."""
    many = Many.checked(queue, name, many_args, at, options)
    async with db.transaction() if db.autocommit else contextlib.nullcontext(), db.cursor() as cursor:
        moment = await (await cursor.execute(queries["now"], {"now": None})).fetchone()
        assert moment is not None, "SELECT of a moment answers one row"
        async with cursor.copy(queries["later_many"]) as copy:
            for row in many.rows(moment[0]):
                await copy.write_row(row)
        await cursor.execute(queries["notify"], {"queue": queue})
    return len(many.jobs)


@dataclass(frozen=True)
class Many:
    """The jobs of one `later_many`, all checked before any is written: each one's arguments as JSON text, with its
    secret names."""

    queue: str
    name: str
    jobs: list[tuple[str, list[str] | None]]
    at: int | None
    priority: int

    @classmethod
    def checked(
        cls, queue: str, name: str, many_args: Iterable[dict[str, Any]], at: int | None, options: dict[str, Any]
    ) -> "Many":
        """The jobs `many_args` make, checked as `later` checks one (ValueError, TypeError)."""
        given = MANY_OPTIONS | options_checked(options, MANY_OPTIONS, "later_many")
        arguments.named(queue, name)
        secret = given["secret"]
        jobs = [
            (arguments.encoded_args(name, args), arguments.declared(name, args, secret)) for args in list(many_args)
        ]
        return cls(queue, name, jobs, at, given["priority"])

    def rows(self, now: int) -> Iterator[tuple[Any, ...]]:
        """The rows of statement `later_many`'s COPY, due at `at` or, when None, at the database's `now`."""
        run_at, later_on = (now, False) if self.at is None else (self.at, self.at > now)
        for text, hidden in self.jobs:
            yield (self.queue, self.name, text, run_at, later_on, self.priority, ATTEMPTS, hidden, now)


def psycopg_of(db: Any) -> psycopg.Connection[Any]:
    """The psycopg Connection under `db`, on the transaction `db` is in.

    Anything that is neither SQLAlchemy's nor Django's is taken as it is: a psycopg
    Connection, or what stands for one (the guarded connection a performer is given).
    A SQLAlchemy or Django connection on another driver is a TypeError saying so.
    """
    module = type(db).__module__
    if module.startswith(SQLALCHEMY):
        # A Session's connection() is the Connection of its transaction, begun if need be;
        # a Connection's own `connection` is the pool's proxy of the driver's connection.
        connection = db.connection() if callable(db.connection) else db
        if inspect.iscoroutine(connection):  # an AsyncSession's: awaited only in its own loop
            connection.close()
            raise TypeError(
                f"jobs cannot queue on a {type(db).__name__}; await jobs.later on its psycopg AsyncConnection"
                " ((await session.connection()).connection.driver_connection)"
            )
        driver = connection.connection.driver_connection
    elif module.startswith(DJANGO):
        db.ensure_connection()
        driver = db.connection
    else:
        return db  # type: ignore[no-any-return]
    if isinstance(driver, psycopg.Connection):
        return driver
    raise TypeError(
        f"jobs queues on a psycopg 3 connection; {type(db).__name__} ({module}) holds "
        f"{type(driver).__name__} (with SQLAlchemy, use postgresql+psycopg://)"
    )
