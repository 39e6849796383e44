"""Async performers: an `async def` runs on its work thread's loop, writes on its job's transaction,
and stops when its job must: a timeout, an operator's cancel, a stop's grace."""

import asyncio
import time

import pytest

import jobs
from tests.jobs.helpers import emptied, scalar, wait_for

PAID = "CREATE TABLE IF NOT EXISTS async_paid (job bigint NOT NULL, n int NOT NULL)"
STUCK = 60.0  # seconds an async performer would sleep if nothing stopped it


@pytest.fixture
def paid(db):
    return emptied(db, "async_paid", PAID)


async def pay(db, args):
    if args["n"] % 2:
        await asyncio.sleep(0.001)  # a real wait between the statements, as an HTTP call's would be
    await db.execute("INSERT INTO async_paid VALUES (%s, %s)", [jobs.current_job().id, args["n"]])
    cursor = await db.execute("SELECT count(*) FROM async_paid WHERE job = %s", [jobs.current_job().id])
    (count,) = await cursor.fetchone()
    if args.get("fail"):
        raise RuntimeError(f"refused after writing {count} row(s)")


def test_an_async_performer_writes_once_on_its_job_s_transaction(paid, started):
    started(["default"], {"pay": pay}, threads=2)
    ok = [jobs.later(paid, "default", "pay", {"n": n}) for n in range(20)]
    failed = jobs.later(paid, "default", "pay", {"n": 99, "fail": True})
    wait_for(lambda: scalar(paid, "SELECT count(*) FROM jobs WHERE id = ANY(%s)", (ok,)) == 0, "the 20 jobs to end")
    assert scalar(paid, "SELECT count(*) FROM async_paid WHERE n < 99") == 20
    assert scalar(paid, "SELECT count(DISTINCT job) FROM async_paid") == 20  # each once
    wait_for(lambda: scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (failed,)), "the failure")
    assert scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (failed,)) == "refused after writing 1 row(s)"
    assert scalar(paid, "SELECT count(*) FROM async_paid WHERE n = 99") == 0  # rolled back with its attempt


@jobs.policy(timeout=0.5, attempts=1)
async def stuck(db, args):
    await asyncio.sleep(STUCK)


async def waiting(db, args):
    await db.execute("INSERT INTO async_paid VALUES (%s, 0)", [jobs.current_job().id])
    await asyncio.sleep(STUCK)


def test_an_async_performer_past_its_timeout_is_cancelled_and_its_thread_carries_on(paid, started):
    worker = started(["default"], {"stuck": stuck, "pay": pay})
    job = jobs.later(paid, "default", "stuck", {})
    began = time.monotonic()
    wait_for(lambda: scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (job,)), "the timeout")
    assert scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (job,)).startswith("timed out after 0.5 s")
    after = jobs.later(paid, "default", "pay", {"n": 1})
    wait_for(lambda: scalar(paid, "SELECT count(*) FROM async_paid WHERE job = %s", (after,)) == 1, "the next job")
    assert time.monotonic() - began < STUCK / 2
    assert len(worker.supervisor.threads()) == 1


def test_an_async_performer_an_operator_cancels_stops_and_keeps_nothing(paid, started):
    started(["default"], {"waiting": waiting})
    job = jobs.later(paid, "default", "waiting", {})
    wait_for(lambda: scalar(paid, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the job to start")
    jobs.cancelled(paid, job)
    wait_for(lambda: scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (job,)), "the cancel to shelve it")
    assert scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (job,)) == jobs.CANCELLED
    assert scalar(paid, "SELECT count(*) FROM async_paid") == 0


def test_a_stop_s_grace_ends_an_async_performer_and_gives_its_job_back(paid, connect):
    worker = jobs.worker(connect, ["default"], {"waiting": waiting})
    job = jobs.later(paid, "default", "waiting", {})
    wait_for(lambda: scalar(paid, "SELECT attempts FROM jobs WHERE id = %s", (job,)) == 1, "the job to start")
    began = time.monotonic()
    worker.stop(grace=0.5)
    assert worker.join(10)
    assert time.monotonic() - began < STUCK / 2
    assert scalar(paid, "SELECT attempts, claim FROM jobs WHERE id = %s", (job,)) == 0
    assert scalar(paid, "SELECT count(*) FROM async_paid") == 0


async def noop(db, args):
    pass


def test_an_async_performer_worked_inside_a_running_loop_fails_with_the_reason_and_leaves_the_loop_running(paid):
    job = jobs.later(paid, "default", "noop", {})

    async def app() -> tuple[str | None, bool]:
        said = jobs.worked(paid, "default", {"noop": noop})  # blocking, on the loop's own thread
        return said, asyncio.get_running_loop().is_running()

    said, running = asyncio.run(app())
    assert said is not None and said.startswith("failed noop on attempt 1"), said
    assert running
    assert "this thread runs a loop already" in scalar(paid, "SELECT failure FROM jobs WHERE id = %s", (job,))
