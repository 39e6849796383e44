"""The claim walks the `jobs_ready` index in order whatever the statistics say, and walks it once."""

import psycopg
import pytest

import jobs
from jobs.store import claims
from tests.jobs.helpers import walk

BACKLOG = 3_000  # due jobs that arrive after the statistics were taken


def executed_nodes(plan: dict):
    """Every node of an EXPLAIN (ANALYZE, FORMAT JSON) plan that ran at least once."""
    if plan.get("Actual Loops", 1) > 0:
        yield plan
        for child in plan.get("Plans", []):
            yield from executed_nodes(child)


def claim_plan(db) -> list[dict]:
    """The nodes the claim of a batch of 4 ran to find its jobs, in a transaction rolled back afterwards.

    Only the walk counts: the join above it meets at most LIMIT rows, whatever its shape.
    """
    params = {
        "queue": "default",
        "now": jobs.now_ms(),
        "lease": 30_000,
        "claim": 1,
        "worker": None,
        "held": None,
        "budgets": "{}",
    }
    with db.transaction(force_rollback=True):
        [[explained]] = db.execute(
            b"EXPLAIN (ANALYZE, FORMAT JSON) " + claims.claim_statement(4).as_bytes(db), params
        ).fetchone()
    return list(executed_nodes(walk(explained["Plan"])))


@pytest.mark.parametrize(
    "quiet",
    [
        pytest.param(0, id="analyzed-empty"),
        pytest.param(5, id="analyzed-with-five-jobs-in-work"),
    ],
)
def test_claim_walks_the_ready_index_in_order_after_statistics_of_a_quiet_queue(db, quiet):
    if quiet:
        jobs.later_many(db, "default", "noop", [{}] * quiet)
        assert len(claims.claimed(db, "default", jobs.now_ms(), limit=quiet)) == quiet
    db.execute("ANALYZE jobs")
    jobs.later_many(db, "default", "noop", [{"n": n} for n in range(BACKLOG)], at=jobs.now_ms() - 1000)
    nodes = claim_plan(db)
    kinds = [(node["Node Type"], node.get("Relation Name"), node.get("Index Name")) for node in nodes]
    kinds = [kind for kind in kinds if kind[0] != "Result"]  # the due bound, computed once
    assert not [kind for kind in kinds if kind[0] == "Sort"], kinds
    assert not [kind for kind in kinds if kind[0] == "Seq Scan" and kind[1] == "jobs"], kinds
    assert ("Index Scan", "jobs", "jobs_ready") in kinds, kinds
    assert [node["Actual Rows"] for node in nodes if node["Node Type"] == "LockRows"] == [4]


def test_a_claim_takes_its_limit_in_one_walk_after_statistics_of_a_drained_table(private_url):
    # The first statistics of a busy queue, taken between bursts: every row deleted,
    # the pages still there, and no column statistics, as ANALYZE writes none from an
    # empty sample. The planner then counts no row at all in a table that has many.
    with psycopg.connect(private_url, autocommit=True) as db:  # new tables: statistics of their own
        jobs.later_many(db, "default", "noop", [{}] * BACKLOG)
        db.execute("DELETE FROM jobs")
        db.execute("ANALYZE jobs")
        jobs.later_many(db, "default", "noop", [{"n": n} for n in range(BACKLOG)], at=jobs.now_ms() - 1000)
        nodes = claim_plan(db)
        assert [node["Actual Loops"] for node in nodes if node["Node Type"] == "LockRows"] == [1], "the walk ran once"
        assert len(claims.claimed(db, "default", jobs.now_ms(), limit=4)) == 4
        assert db.execute("SELECT count(*) FROM jobs WHERE claim IS NOT NULL").fetchone()[0] == 4, "it took no more"
