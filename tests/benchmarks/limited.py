"""The limits column (issue 27): what a queue's limit costs its claim, and what the test for one costs every claim.

Three claims of one due job, taking turns, timed one at a time as the scale check times its claims: the
plain claim of a queue with no limit as it is, the same without its test of job_limits (the
claim before limits), and the claim of a queue near its rate's edge (its window holds
REFILL to EDGE_RATE - 1 starts: refilled to REFILL every EDGE_RATE - REFILL claims, untimed,
so that each timed claim writes the row once, as a claim does). And the enqueue→start latency of an idle
worker on a queue limited far above what it is offered, beside the same with no limit.
"""

import time
from dataclasses import dataclass

from psycopg import sql

import jobs
from jobs.core.job import job_row
from jobs.store import claims as statements
from jobs.store import limits
from jobs.store.claims import queries

from . import database, queue, timing

EDGE_RATE = 100  # the rate of the claim at its edge: jobs an hour, so no start leaves the window while it runs
REFILL = 50  # starts the window of the claim at its edge is refilled to
LATENCY_RATE = 10_000  # jobs a second the latency's queue is limited to: far above what it is offered
WARMUP = 10  # claims timed first and thrown away (prepared statements, caches)
LIMITED_SHARE = 1.10  # the limited claim at its edge over the plain claim, at most (issue 27, point 4)
UNLIMITED_SHARE = 1.05  # the plain claim over the claim before limits: "nothing measurable", within noise
LIMITED = "benchmark-limited"  # the queue of the claim near a rate's edge
GUARD = "        AND NOT EXISTS (SELECT FROM job_limits WHERE queue = %(queue)s)\n"  # the plain claim's test


@dataclass
class Claims:
    """Median seconds of each claim of one due job, and the latencies with and without a limit."""

    plain: float
    before: float
    limited: float
    latency: list[float]
    latency_unlimited: list[float]


def measure(url: str, samples: int, rounds: int) -> Claims:
    """The three claims, the fastest median of `rounds` each; then both latencies."""
    medians: dict[str, list[float]] = {"plain": [], "before": [], "limited": []}
    with database.connected(url) as db:
        database.emptied(db, queue.TABLE)
        edge = jobs.limited(db, LIMITED, rate=(EDGE_RATE, 3600.0))
        for _ in range(rounds):
            for key, median in timed(db, samples, edge).items():
                medians[key].append(median)
        jobs.unlimited(db, LIMITED)
        jobs.limited(db, database.QUEUE, rate=(LATENCY_RATE, 1.0))
        latency = queue.latencies(url, samples)
        jobs.unlimited(db, database.QUEUE)
    latency_unlimited = queue.latencies(url, samples)
    plain, before, limited = (min(medians[key]) for key in ("plain", "before", "limited"))
    return Claims(plain, before, limited, latency, latency_unlimited)


def timed(db, samples: int, edge: limits.Limit) -> dict[str, float]:
    """The median seconds of each claim over `samples` turns, the three claims taking turns within each, so
    that they meet the same passing disturbances; each claims a job queued just before it. The claim at the
    edge knows its queue's limit `edge`, as a worker does."""
    claims = {"plain": (database.QUEUE, plain_claim), "before": (database.QUEUE, claim_before_limits)}
    claims["limited"] = (LIMITED, lambda db: edge_claim(db, edge))
    seconds: dict[str, list[float]] = {key: [] for key in claims}
    for n in range(WARMUP + samples):
        for key, (name, claim) in claims.items():
            jobs.later(db, name, database.NAME, {}, jobs.now_ms() - database.PAST)
            if name == LIMITED and n % (EDGE_RATE - REFILL) == 0:
                at_the_edge(db)
            started = time.perf_counter()
            taken = claim(db)
            took = time.perf_counter() - started
            if len(taken) != 1:
                raise RuntimeError(f"the limits column's {key} claim took {len(taken)} jobs, not the one due")
            statements.finished(db, taken)
            if n >= WARMUP:
                seconds[key].append(took)
    return {key: timing.median(values) for key, values in seconds.items()}


def plain_claim(db) -> list:
    return statements.claimed(db, database.QUEUE, jobs.now_ms(), limit=1)


def claim_before_limits(db) -> list:
    """The plain claim without its test of job_limits: the claim as it was before limits."""
    text = queries["claim"]
    if GUARD not in text:
        raise RuntimeError("the plain claim no longer tests job_limits as GUARD says: update GUARD")
    statement = sql.SQL(text.replace(GUARD, "")).format(limit=sql.Literal(1), bound=sql.SQL(""))
    params = statements.claim_params(database.QUEUE, jobs.now_ms(), None)
    with db.cursor(row_factory=job_row) as cursor:
        return cursor.execute(statement, params).fetchall()


def at_the_edge(db) -> None:
    """Fills the window with REFILL starts: the claims that follow take the room left, to the last."""
    db.execute(
        "UPDATE job_limits SET starts = array_fill(%s::bigint, ARRAY[%s]) WHERE queue = %s",
        (jobs.now_ms() - 1000, REFILL, LIMITED),
    )


def edge_claim(db, edge: limits.Limit) -> list:
    return limits.claimed(db, LIMITED, jobs.now_ms(), known=edge).jobs


def rows(figures: dict, ms, ratio) -> list[list[str]]:
    """The report's rows of the column, with report.py's `ms` and `ratio`."""
    if "limits" not in figures:
        return []
    claims = figures["limits"]
    own, unlimited = timing.median(claims.latency), timing.median(claims.latency_unlimited)
    return [
        [
            "claim of a queue with no limit",
            ms(claims.plain),
            ms(claims.before),
            "the claim before limits",
            ratio(claims.plain, claims.before),
        ],
        [
            f"claim near a rate's edge ({REFILL}-{EDGE_RATE - 1} starts in the window)",
            ms(claims.limited),
            ms(claims.plain),
            "the claim of a queue with no limit",
            ratio(claims.limited, claims.plain),
        ],
        [
            "enqueue→start latency under a limit, median",
            ms(own),
            ms(unlimited),
            "the same with no limit",
            ratio(own, unlimited),
        ],
    ]


def goals(figures: dict, verdict) -> list[list[str]]:
    """The column's goals, with report.py's `verdict`."""
    if "limits" not in figures:
        return []
    claims = figures["limits"]
    limited, unlimited = claims.limited / claims.plain, claims.plain / claims.before
    return [
        [
            f"claim near a rate's edge <= {LIMITED_SHARE:g} x no limit",
            f"{limited:.2f}",
            verdict(limited <= LIMITED_SHARE),
        ],
        [
            f"claim with no limit <= {UNLIMITED_SHARE:g} x before limits",
            f"{unlimited:.2f}",
            verdict(unlimited <= UNLIMITED_SHARE),
        ],
    ]
