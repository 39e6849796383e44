"""The two checks that are not rates: the claim beside a million waiting rows, and a worker's memory.

Scale: the claim must stay an index lookup however many jobs wait in the future or
have failed for good, so its time is compared with the same claim on an empty table.
Memory: a worker process drains many jobs, and its resident memory is read at both ends.
"""

import time
from dataclasses import dataclass

from psycopg import sql

import jobs
from jobs.store import claims as statements

from . import database, timing
from .queue import PERFORMERS, TABLE, worked_out

FUTURE = 24 * 3600 * 1000  # ms from now that the scale check's waiting jobs are due
CLAIM_WARMUP = 10  # claims timed first and thrown away (prepared statements, caches)
MEMORY_WARMUP = 1000  # jobs a worker runs before its memory is read "at start": imports and caches are not growth
MEMORY_LOOK = 0.01  # seconds between looks at the worker's count while it warms up


@dataclass
class Claims:
    """Median seconds of a claim that takes one due job, and of one that finds nothing due."""

    due: float
    nothing: float


def scale(url: str, waiting: int, samples: int, rounds: int) -> tuple[Claims, Claims, str]:
    """The claims on an empty table and beside `waiting` rows, the best of `rounds` each, and the plan of the second."""
    with database.connected(url) as db:
        database.emptied(db, TABLE)
        empty = fastest([claims(db, samples) for _ in range(rounds)])
        database.filled(db, TABLE, waiting_rows(waiting))
        full = fastest([claims(db, samples) for _ in range(rounds)])
        plan = scans(db)
        database.emptied(db, TABLE)
    return empty, full, plan


def fastest(rounds: list[Claims]) -> Claims:
    """The lowest of each median over rounds, the ones least disturbed by anything else on the machine."""
    return Claims(min(one.due for one in rounds), min(one.nothing for one in rounds))


def waiting_rows(count: int):
    """Rows for `database.filled`: half due FUTURE from now, half failed for good."""
    now = jobs.now_ms()
    for n in range(count):
        yield (now + FUTURE, 0, jobs.ATTEMPTS) if n % 2 else (now - database.PAST, jobs.ATTEMPTS, jobs.ATTEMPTS)


def claims(db, samples: int) -> Claims:
    """Times `samples` claims of a job queued just before each, and as many claims that find nothing."""
    due, nothing = [], []
    for n in range(CLAIM_WARMUP + samples):
        jobs.later(db, database.QUEUE, database.NAME, {}, jobs.now_ms() - database.PAST)
        seconds, taken = timed_claim(db)
        if len(taken) != 1:
            raise RuntimeError(f"the scale check's claim took {len(taken)} jobs, not the one due")
        statements.finished(db, taken)
        idle_seconds, _ = timed_claim(db)
        if n >= CLAIM_WARMUP:
            due.append(seconds)
            nothing.append(idle_seconds)
    return Claims(timing.median(due), timing.median(nothing))


def timed_claim(db) -> tuple[float, list]:
    """Seconds jobs' claim of one job takes, and what it claimed."""
    started = time.perf_counter()
    taken = statements.claimed(db, database.QUEUE, jobs.now_ms(), limit=1)
    return time.perf_counter() - started, taken


def scans(db) -> str:
    """How the claim reads its table, from its plan: e.g. "Index Scan using jobs_due"."""
    params = {
        "queue": database.QUEUE,
        "now": jobs.now_ms(),
        "lease": 1000,
        "claim": 0,
        "worker": None,
        "held": None,
        "budgets": "{}",
    }
    (plan,) = db.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + statements.claim_statement(1), params).fetchone()[0]
    return ", ".join(scan_nodes(plan["Plan"]))


def scan_nodes(node: dict):
    """The scans under a plan node, each named with its index or its table."""
    if node["Node Type"].endswith("Scan") and "Relation Name" in node:
        where = f"using {node['Index Name']}" if "Index Name" in node else f"on {node['Relation Name']}"
        yield f"{node['Node Type']} {where}"
    for child in node.get("Plans", []):
        yield from scan_nodes(child)


def memory(url: str, count: int) -> tuple[float, float, float]:
    """A worker process's resident MiB after its first MEMORY_WARMUP jobs and after draining `count`, and its rate."""
    with database.connected(url) as db:
        database.filled(db, TABLE, database.due(count))
    seconds, [(start, end, processed)] = timing.together(resident, [(url, min(MEMORY_WARMUP, count // 10))])
    if processed != count:
        raise RuntimeError(f"the memory check's worker processed {processed} of {count} jobs")
    return start, end, count / seconds


def resident(url: str, warmup: int, gate) -> tuple[float, float, int]:
    """The worker process of the memory check: its resident MiB after `warmup` jobs and at the end."""
    worker = jobs.Worker(database.connector(url), [database.QUEUE], PERFORMERS, threads=1)
    gate.wait()
    worker.start()
    while worker.counts.processed < warmup and not worker.join(MEMORY_LOOK):
        pass
    start = timing.resident_mib()
    worked_out(worker)
    return start, timing.resident_mib(), worker.counts.processed
