"""A job ends with everything it started: the tasks an `async def` performer leaves are awaited
(or cancelled) before its settlement, its connection takes no statement once it ended, and a
connection found in a transaction the worker never began is given up rather than settled on."""

import asyncio
import threading

import psycopg
import pytest

import jobs
from jobs.runtime.coroutines import LOOK, loop_of_this_thread
from tests.jobs.helpers import emptied, scalar, wait_for

TABLES = "CREATE TABLE IF NOT EXISTS task_audit (what text NOT NULL); CREATE TABLE IF NOT EXISTS task_refunds (n int)"
AUDIT_AFTER = 0.2  # seconds the order's audit task waits before it writes, as an API call first would
REFUND_TAKES = 0.3  # seconds the refund runs between its write and its failure
PINGS = 4
STUCK = 60.0  # seconds a task would wait if nothing cancelled it


@pytest.fixture
def shop(db):
    return emptied(db, "task_audit, task_refunds", TABLES)


async def order(db, args):
    async def audit():
        await asyncio.sleep(AUDIT_AFTER)
        await db.execute("INSERT INTO task_audit VALUES (%s)", [f"order {args['n']}"])

    asyncio.create_task(audit())  # fire and forget: the order's own work is done


async def refund(db, args):
    await db.execute("INSERT INTO task_refunds VALUES (1)")
    await asyncio.sleep(REFUND_TAKES)
    raise RuntimeError("the payment provider said no")


def test_a_task_an_async_job_leaves_commits_with_it_and_not_with_the_failing_job_after_it(shop, started):
    started(["shop"], {"order": order, "refund": refund}, threads=1)
    ordered = jobs.later(shop, "shop", "order", {"n": 1})
    refused = jobs.later(shop, "shop", "refund", {"n": 1})
    wait_for(lambda: scalar(shop, "SELECT failure FROM jobs WHERE id = %s", (refused,)), "the refund to fail")
    assert scalar(shop, "SELECT count(*) FROM jobs WHERE id = %s", (ordered,)) == 0
    assert scalar(shop, "SELECT array_agg(what) FROM task_audit") == ["order 1"]  # committed with its order
    assert scalar(shop, "SELECT count(*) FROM task_refunds") == 0  # rolled back with the refund alone
    assert scalar(shop, "SELECT failure FROM jobs WHERE id = %s", (refused,)) == "the payment provider said no"


def test_quiet_async_jobs_after_one_that_left_a_task_each_run_once(shop, started):
    pinged = []

    async def ping(db, args):
        await asyncio.sleep(AUDIT_AFTER)  # never touches the connection: a quiet success
        pinged.append(args["n"])

    started(["shop"], {"order": order, "ping": ping}, threads=1)
    ids = [jobs.later(shop, "shop", "order", {"n": 2})]
    ids += [jobs.later(shop, "shop", "ping", {"n": n}) for n in range(PINGS)]
    wait_for(lambda: scalar(shop, "SELECT count(*) FROM jobs WHERE id = ANY(%s)", (ids,)) == 0, "the jobs to end")
    assert sorted(pinged) == list(range(PINGS))  # each once
    assert scalar(shop, "SELECT array_agg(what) FROM task_audit") == ["order 2"]


def test_a_failing_async_job_cancels_the_tasks_it_left_before_its_failure_is_recorded(shop):
    ended = []

    async def waits_on_the_world():
        try:
            await asyncio.sleep(STUCK)
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    async def fails(db, args):
        asyncio.create_task(waits_on_the_world())
        await asyncio.sleep(0)  # the task starts
        raise ValueError("the order is malformed")

    job = jobs.later(shop, "shop", "fails", {})
    said = jobs.worked(shop, "shop", {"fails": fails})
    assert said == "failed fails on attempt 1: the order is malformed"
    assert ended == ["cancelled"]  # within the job's attempt
    assert not asyncio.all_tasks(loop_of_this_thread())
    assert scalar(shop, "SELECT failure FROM jobs WHERE id = %s", (job,)) == "the order is malformed"


def test_a_task_an_async_job_left_that_fails_fails_the_job_and_rolls_back_its_writes(shop):
    async def refused():
        await asyncio.sleep(0)
        raise LookupError("the audit service refused the order")

    async def writes(db, args):
        await db.execute("INSERT INTO task_refunds VALUES (2)")
        asyncio.create_task(refused())

    jobs.later(shop, "shop", "writes", {})
    said = jobs.worked(shop, "shop", {"writes": writes})
    assert said == "failed writes on attempt 1: the audit service refused the order"
    assert scalar(shop, "SELECT count(*) FROM task_refunds") == 0


def test_a_task_whose_failure_the_job_awaited_and_handled_fails_nothing(shop):
    async def refused():
        await asyncio.sleep(0)
        raise LookupError("the audit service refused the order")

    async def tolerant(db, args):
        try:
            await asyncio.gather(refused())
        except LookupError:
            await db.execute("INSERT INTO task_refunds VALUES (3)")  # the job's own fallback

    jobs.later(shop, "shop", "tolerant", {})
    assert jobs.worked(shop, "shop", {"tolerant": tolerant}) == "ran tolerant"
    assert scalar(shop, "SELECT count(*) FROM task_refunds") == 1


@jobs.policy(timeout=0.5, attempts=1)
async def leaves_a_loop(db, args):
    async def forever():
        while True:
            await asyncio.sleep(LOOK)

    asyncio.create_task(forever())


async def refunds(db, args):
    await db.execute("INSERT INTO task_refunds VALUES (4)")


def test_a_task_left_running_forever_ends_at_its_job_s_timeout_and_the_thread_carries_on(shop, started):
    worker = started(["shop"], {"leaves_a_loop": leaves_a_loop, "refunds": refunds}, threads=1)
    job = jobs.later(shop, "shop", "leaves_a_loop", {})
    wait_for(lambda: scalar(shop, "SELECT failure FROM jobs WHERE id = %s", (job,)), "the timeout")
    assert scalar(shop, "SELECT failure FROM jobs WHERE id = %s", (job,)).startswith("timed out after 0.5 s")
    after = jobs.later(shop, "shop", "refunds", {})
    wait_for(lambda: scalar(shop, "SELECT count(*) FROM jobs WHERE id = %s", (after,)) == 0, "the next job")
    assert scalar(shop, "SELECT count(*) FROM task_refunds") == 1
    assert len(worker.supervisor.threads()) == 1


def test_a_job_s_connection_refuses_statements_once_its_job_ended(shop):
    kept = []

    def keeps(db, args):
        kept.append(db)

    job = jobs.later(shop, "shop", "keeps", {})
    assert jobs.worked(shop, "shop", {"keeps": keeps}) == "ran keeps"
    with pytest.raises(psycopg.ProgrammingError, match=f"job {job} \\(keeps on shop\\) has ended"):
        kept[0].execute("INSERT INTO task_audit VALUES ('too late')")
    assert shop.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert scalar(shop, "SELECT count(*) FROM task_audit") == 0


def test_a_connection_left_in_a_transaction_the_worker_never_began_is_given_up_and_no_job_runs_twice(
    shop, started, caplog
):
    """A thread a performer started sends BEGIN on the raw connection while the next, quiet job runs."""
    go, sent, runs = threading.Event(), threading.Event(), []

    def opens_later(db, args):
        raw = db.connection

        def rogue():
            go.wait(10)
            raw.execute("BEGIN")
            sent.set()

        threading.Thread(target=rogue, daemon=True).start()
        runs.append("opens_later")

    def quiet(db, args):
        go.set()
        sent.wait(10)
        runs.append(f"quiet {args['n']}")

    started(["shop"], {"opens_later": opens_later, "quiet": quiet}, threads=1)
    ids = [jobs.later(shop, "shop", "opens_later", {})]
    ids += [jobs.later(shop, "shop", "quiet", {"n": n}) for n in range(2)]
    wait_for(lambda: scalar(shop, "SELECT count(*) FROM jobs WHERE id = ANY(%s)", (ids,)) == 0, "the jobs to end")
    assert sorted(runs) == ["opens_later", "quiet 0", "quiet 1"]  # each once
    assert "in a transaction the worker never began" in caplog.text
