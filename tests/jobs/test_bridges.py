"""Queueing on the transaction an app already holds: a psycopg AsyncConnection, a SQLAlchemy Session
or Connection, a Django connection. The job commits with the app's rows, or neither exists."""

import asyncio
import select
from concurrent.futures import ThreadPoolExecutor

import django
import psycopg
import pytest
import sqlalchemy
from django.conf import settings
from django.db import connection, transaction
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session

import jobs
from tests.jobs.helpers import emptied, scalar

ORDERS = "CREATE TABLE IF NOT EXISTS bridge_orders (id int PRIMARY KEY)"
NOTIFY_WAIT = 5.0  # seconds a test waits for the notification a commit sends


@pytest.fixture
def orders(db):
    return emptied(db, "bridge_orders", ORDERS)


def apart(function, *args):
    """function(*args) on a thread of its own, as an app's request would run: no event loop of the test
    runner's (the browser specs' driver keeps one on the main thread) is running there."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args).result()


def queued(db) -> list[tuple[str, str, dict]]:
    return [(job["queue"], job["name"], job["args"]) for job in jobs.listed(db, "default")]


def test_an_async_transaction_queues_its_job_with_its_rows(database_url, orders):
    async def app():
        async with await psycopg.AsyncConnection.connect(database_url) as aconn:
            async with aconn.transaction():
                await aconn.execute("INSERT INTO bridge_orders VALUES (42)")
                job = await jobs.later(aconn, "default", "receipt", {"order": 42, "token": "t0ken"}, secret=["token"])
            with pytest.raises(psycopg.errors.UniqueViolation):
                async with aconn.transaction():
                    await jobs.later(aconn, "default", "receipt", {"order": 43})
                    await aconn.execute("INSERT INTO bridge_orders VALUES (42)")  # the app's write fails
            return job

    job = apart(asyncio.run, app())
    assert queued(orders) == [("default", "receipt", {"order": 42, "token": "t0ken"})]
    assert scalar(orders, "SELECT secret FROM jobs WHERE id = %s", (job,)) == ["token"]
    assert scalar(orders, "SELECT count(*) FROM bridge_orders") == 1


def test_an_async_later_refuses_bad_arguments_and_writes_nothing(database_url, db):
    async def app():
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as aconn:
            with pytest.raises(TypeError):
                await jobs.later(aconn, "default", "receipt", {"at": object()})
            with pytest.raises(ValueError):
                await jobs.later(aconn, "", "receipt", {})
            first = await jobs.later(aconn, "default", "receipt", {}, unique="order-42")
            again = await jobs.later(aconn, "default", "receipt", {}, unique="order-42")
            many = await jobs.later_many(aconn, "default", "receipt", [{"order": n} for n in range(3)])
            with pytest.raises(TypeError):
                await jobs.later_many(aconn, "default", "receipt", [{"order": 1}, {"order": {1, 2}}])
            return first, again, many

    first, again, many = apart(asyncio.run, app())
    assert first is not None and again is None and many == 3
    assert scalar(db, "SELECT count(*) FROM jobs") == 4


def test_an_async_job_wakes_workers_at_its_commit_not_before(database_url, db):
    db.execute("LISTEN jobs")

    def heard() -> list[str]:
        if select.select([db.fileno()], [], [], 0.1)[0]:
            db.execute("SELECT 1")  # reads what has come in
        return [note.payload for note in db.notifies(timeout=0, stop_after=10)]

    async def app():
        async with await psycopg.AsyncConnection.connect(database_url) as aconn:
            async with aconn.transaction():
                await jobs.later(aconn, "mail", "receipt", {})
                assert heard() == []  # not while the transaction is open
            return heard_within()

    def heard_within() -> list[str]:
        if select.select([db.fileno()], [], [], NOTIFY_WAIT)[0]:
            return heard()
        return []

    assert apart(asyncio.run, app()) == ["mail"]


def sqlalchemy_url(database_url: str) -> str:
    return "postgresql+psycopg://" + database_url.split("://", 1)[1]


def test_a_sqlalchemy_session_queues_its_job_on_its_transaction(database_url, orders):
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url))
    try:
        with Session(engine) as session:
            session.execute(sqlalchemy.text("INSERT INTO bridge_orders VALUES (1)"))
            jobs.later(session, "default", "receipt", {"order": 1})
            session.rollback()
            assert queued(orders) == []
            session.execute(sqlalchemy.text("INSERT INTO bridge_orders VALUES (2)"))
            jobs.later(session, "default", "receipt", {"order": 2})
            assert queued(orders) == []  # not before the session commits
            session.commit()
        with engine.begin() as connection:  # a Connection too, on its own transaction
            assert jobs.later_many(connection, "default", "receipt", [{"order": 3}]) == 1
    finally:
        engine.dispose()
    assert queued(orders) == [("default", "receipt", {"order": 2}), ("default", "receipt", {"order": 3})]
    assert scalar(orders, "SELECT array_agg(id ORDER BY id) FROM bridge_orders") == [2]


def test_a_sqlalchemy_async_session_is_refused_with_what_to_hand_instead(database_url, db):
    engine = create_async_engine(sqlalchemy_url(database_url))
    with pytest.raises(TypeError, match="AsyncConnection"):
        jobs.later(AsyncSession(engine), "default", "receipt", {})
    assert queued(db) == []


def test_a_sqlalchemy_engine_on_another_driver_is_refused_with_the_reason(database_url):
    engine = sqlalchemy.create_engine("sqlite://")
    try:
        with engine.connect() as connection, pytest.raises(TypeError, match="psycopg 3"):
            jobs.later(connection, "default", "receipt", {})
    finally:
        engine.dispose()


def test_a_django_atomic_block_queues_its_job_with_its_rows(database_url, orders):
    if not settings.configured:
        parts = conninfo_to_dict(database_url)
        settings.configure(
            DATABASES={
                "default": {
                    "ENGINE": "django.db.backends.postgresql",
                    "NAME": parts.get("dbname", "postgres"),
                    "USER": parts.get("user", ""),
                    "PASSWORD": parts.get("password", ""),
                    "HOST": parts.get("host", ""),
                    "PORT": parts.get("port", ""),
                }
            },
        )
        django.setup()
    apart(django_view)
    assert queued(orders) == [("default", "receipt", {"order": 8})]
    assert scalar(orders, "SELECT array_agg(id) FROM bridge_orders") == [8]


def django_view() -> None:
    """What two Django views do: one fails after queueing its job, inside transaction.atomic(); one commits."""
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO bridge_orders VALUES (7)")
            jobs.later(connection, "default", "receipt", {"order": 7})
            raise RuntimeError("the view failed after queueing")
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO bridge_orders VALUES (8)")
            jobs.later(connection, "default", "receipt", {"order": 8})
    finally:
        connection.close()
