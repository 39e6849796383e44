"""`later` and `later_many` on the transaction an app already holds, whatever holds it.

Besides a psycopg Connection they take the connection under a SQLAlchemy Session
(Flask-SQLAlchemy's `db.session` too) or Connection on the psycopg 3 driver
(`postgresql+psycopg://`), and Django's `connection` on its PostgreSQL backend, which
is psycopg 3 from Django 4.2 on (`psycopg_of`): the job is written on that session's
transaction, and commits or rolls back with the app's own rows. On a psycopg
AsyncConnection they answer a coroutine, `await jobs.later(aconn, ...)`, with the same
checks before anything is sent. Neither SQLAlchemy nor Django is imported: each is told
by the module of its connection's type, so jobs still needs psycopg alone.
"""

import contextlib
import inspect
from collections.abc import Collection, Coroutine, Iterable
from typing import Any, overload

import psycopg

from . import claims, queries

SQLALCHEMY = "sqlalchemy."  # the start of the module of every SQLAlchemy type
DJANGO = "django."  # the start of the module of Django's connection types (`connection` is a proxy of one)


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


@overload
def later(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    args: dict[str, Any],
    at: int | None = None,
    **options: Any,
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
    """claims.later on `db` (see the module's header for what it may be): the job's id, or None for a unique job
    already waiting or running; a coroutine answering that on an AsyncConnection."""
    if isinstance(db, psycopg.AsyncConnection):
        return later_async(db, queue, name, args, at, **options)
    return claims.later(psycopg_of(db), queue, name, args, at, **options)


@overload
def later_many(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    *,
    priority: int = 0,
    secret: Collection[str] | None = None,
) -> Coroutine[Any, Any, int]: ...
@overload
def later_many(
    db: psycopg.Connection[Any] | Any,
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    *,
    priority: int = 0,
    secret: Collection[str] | None = None,
) -> int: ...
def later_many(
    db: Any,
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    *,
    priority: int = 0,
    secret: Collection[str] | None = None,
) -> Any:
    """claims.later_many on `db`, as `later` takes it; a coroutine on an AsyncConnection."""
    if isinstance(db, psycopg.AsyncConnection):
        return later_many_async(db, queue, name, many_args, at, priority=priority, secret=secret)
    return claims.later_many(psycopg_of(db), queue, name, many_args, at, priority=priority, secret=secret)


async def later_async(
    db: psycopg.AsyncConnection[Any], queue: str, name: str, args: dict[str, Any], at: int | None = None, **options: Any
) -> int | None:
    """claims.later on an AsyncConnection, with its options: the same statement, checked the same way before it is
    sent."""
    params = claims.later_params(queue, name, args, at, **options)
    cursor = await db.execute(claims.LATER[params["unique"] is not None], params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def later_many_async(
    db: psycopg.AsyncConnection[Any],
    queue: str,
    name: str,
    many_args: Iterable[dict[str, Any]],
    at: int | None = None,
    *,
    priority: int = 0,
    secret: Collection[str] | None = None,
) -> int:
    """claims.later_many on an AsyncConnection: one COPY, on a transaction of its own if `db` is autocommit."""
    checked = claims.many_checked(queue, name, many_args, secret)
    async with db.transaction() if db.autocommit else contextlib.nullcontext(), db.cursor() as cursor:
        await cursor.execute(queries["now"], {"now": None})
        row = await cursor.fetchone()
        assert row is not None, "SELECT of a moment answers one row"
        now = row[0]
        async with cursor.copy(queries["later_many"]) as copy:
            for row in claims.many_rows(queue, name, checked, at, now, priority):
                await copy.write_row(row)
        await cursor.execute(queries["notify"], {"queue": queue})
    return len(checked)
