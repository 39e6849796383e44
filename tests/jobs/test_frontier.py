"""Beside a snapshot held open elsewhere, the claim seeks past the dead entries it keeps (issue 12, point 7).

What is asserted is the work the claim does (the index and heap pages it reads), not
its time, so the tests say the same on a busy machine; the time is the held
benchmark's (python -m tests.benchmarks.held).
"""

import pytest

import jobs
from jobs.store import claims, frontier
from tests.jobs.helpers import scalar, wait_for, walk

DEAD = 40_000  # jobs queued, claimed and deleted while a snapshot is held: twice as many dead index entries
FEW = 10  # jobs due after them


@pytest.fixture
def held(connect):
    """A transaction held open on a connection of its own, with a snapshot that keeps every deleted row."""
    holder = connect()
    holder.execute("SELECT txid_current()")
    yield holder
    holder.close()


def worked_through(db, count: int) -> None:
    """Queues `count` jobs due a minute ago, then claims and deletes every one, leaving dead rows behind."""
    jobs.later_many(db, "default", "noop", [{}] * count, at=jobs.now_ms() - 60_000)
    while claimed := claims.claimed(db, "default", limit=1000):
        claims.finished(db, claimed)


def pages_read(db, bound) -> tuple[int, list[int]]:
    """The buffers the claim of FEW jobs reads to find them, starting at `bound`, and the ids it takes (rolled back)."""
    params = {
        "queue": "default",
        "now": None,
        "lease": 30_000,
        "claim": 1,
        "worker": None,
        "held": None,
        "budgets": "{}",
    }
    if bound is not None:
        params["after_priority"], params["after_run_at"] = bound
    statement = claims.claim_statement(FEW, bound is not None).as_bytes(db)
    with db.transaction(force_rollback=True):
        [[explained]] = db.execute(b"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, params).fetchone()
    with db.transaction(force_rollback=True):
        ids = [row[0] for row in db.execute(statement, params)]
    walked = walk(explained["Plan"])  # the update above it reads the same pages for the same rows either way
    return walked["Shared Hit Blocks"] + walked["Shared Read Blocks"], sorted(ids)


def test_beside_a_held_snapshot_a_bounded_claim_reads_a_fraction_of_the_pages(db, held, monkeypatch):
    worked_through(db, DEAD)
    jobs.later_many(db, "default", "noop", [{}] * FEW)
    due = [row[0] for row in db.execute("SELECT id FROM jobs ORDER BY id")]
    monkeypatch.setattr(frontier, "SLOW_WALK", 0.0)  # whatever this machine's speed, the walk counts as slow
    monkeypatch.setattr(frontier, "OLD_SNAPSHOT", 0.0)  # however quickly this machine made the dead entries
    frontiers = frontier.Frontiers()
    frontiers.looked(db, ["default"])
    bound = frontiers.bound("default")
    assert bound is not None
    unbounded_pages, unbounded_ids = pages_read(db, None)
    bounded_pages, bounded_ids = pages_read(db, bound)
    assert bounded_ids == unbounded_ids == due, "the same jobs, in the same order"
    assert bounded_pages * 10 < unbounded_pages, (bounded_pages, unbounded_pages)


def test_a_quick_walk_leaves_the_claim_unbounded(db, monkeypatch):
    jobs.later(db, "default", "noop", {})
    monkeypatch.setattr(frontier, "SLOW_WALK", 60.0)
    frontiers = frontier.Frontiers()
    frontiers._bounds["default"] = (0, 0)  # a bound left from a slow walk earlier
    frontiers.looked(db, ["default"])
    assert frontiers.bound("default") is None


def test_with_nothing_due_the_bound_stands_just_before_the_database_moment(db, held, monkeypatch):
    monkeypatch.setattr(frontier, "SLOW_WALK", 0.0)
    monkeypatch.setattr(frontier, "OLD_SNAPSHOT", 0.0)
    frontiers = frontier.Frontiers()
    moment = "SELECT floor(extract(epoch FROM now()) * 1000)::bigint"
    before = scalar(db, moment)
    frontiers.looked(db, ["default"])
    after = scalar(db, moment)
    priority, run_at = frontiers.bound("default")
    assert priority == 0 and before - frontier.SLACK <= run_at <= after - frontier.SLACK


def test_a_look_that_moves_a_bound_back_says_so_so_a_thread_is_woken(db, held, monkeypatch):
    monkeypatch.setattr(frontier, "SLOW_WALK", 0.0)
    monkeypatch.setattr(frontier, "OLD_SNAPSHOT", 0.0)
    jobs.later(db, "default", "noop", {})
    frontiers = frontier.Frontiers()
    assert frontiers.looked(db, ["default"]) is False, "a first bound passes nothing over"
    _, run_at = frontiers.bound("default")
    jobs.later(db, "default", "noop", {}, at=run_at - 60_000)  # behind the bound
    assert frontiers.looked(db, ["default"]) is True
    assert frontiers.looked(db, ["default"]) is False, "the same bound again"
    monkeypatch.setattr(frontier, "SLOW_WALK", 60.0)
    assert frontiers.looked(db, ["default"]) is True, "a bound that goes lets claims start at the front"


def test_jobs_behind_the_bound_run_after_the_next_look(db, connect, held, monkeypatch):
    """A job due before the bound (queued long ago on a transaction that committed late, say) and
    a job more urgent than the bound's priority are not lost: the next look walks from the front."""
    monkeypatch.setattr(frontier, "SLOW_WALK", 0.0)
    monkeypatch.setattr(frontier, "OLD_SNAPSHOT", 0.0)
    worked_through(db, 1_000)
    newer = jobs.later(db, "default", "noop", {})
    worker = jobs.worker(connect, "default", {"noop": lambda db, args: None}, threads=2, poll=0.1)
    try:
        wait_for(lambda: worker.frontiers.bound("default") is not None and not jobs.listed(db), "a bound")
        assert scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", (newer,)) == 0
        priority, run_at = worker.frontiers.bound("default")
        behind = jobs.later(db, "default", "noop", {}, at=run_at - 60_000)
        urgent = jobs.later(db, "default", "noop", {}, priority=priority - 1)
        wait_for(
            lambda: scalar(db, "SELECT count(*) FROM jobs WHERE id IN (%s, %s)", (behind, urgent)) == 0,
            "both to run",
            timeout=10,
        )
    finally:
        worker.stop()
        worker.join(10)
    assert worker.counts.processed == 3


def test_with_no_snapshot_held_a_slow_walk_sets_no_bound(db, monkeypatch):
    """A machine so busy that a look's walk took a second: with no snapshot held there are no dead entries to pass."""
    jobs.later(db, "default", "noop", {})
    ticks = iter(range(0, 1000))
    monkeypatch.setattr(frontier.time, "perf_counter", lambda: float(next(ticks)))  # a second per look at the clock
    frontiers = frontier.Frontiers()
    frontiers.looked(db, ["default"])
    assert frontiers.bound("default") is None


def test_a_drain_claims_from_the_front_whatever_the_bound(db, connect, monkeypatch):
    """stop(drain=True) works until nothing is due: a due job behind the bound is due too."""
    worker = jobs.Worker(connect, "default", {"noop": lambda conn, args: None}, threads=2, poll=5)
    monkeypatch.setattr(worker.frontiers, "looked", lambda db, queues: False)  # the bound stays as set below
    worker.start()
    try:
        worker.frontiers._bounds["default"] = (0, jobs.now_ms() + 3_600_000)  # as a look beside a held snapshot set it
        late = jobs.later(db, "default", "noop", {}, at=jobs.now_ms() - 10_000)
        worker.stop(drain=True)
        assert worker.join(10)
    finally:
        worker.stop()
        worker.join(10)
    assert scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", (late,)) == 0


def test_a_drain_asked_while_a_claim_reads_the_old_bound_still_claims_from_the_front(db, connect, monkeypatch):
    """A thread whose claim was already under way, with the bound the drain drops, when stop(drain=True) came
    does not take that empty claim for the drain's: it claims again from the front before it ends."""
    worker = jobs.Worker(connect, "default", {"noop": lambda conn, args: None}, threads=1, poll=5)
    monkeypatch.setattr(worker.frontiers, "looked", lambda db, queues: False)  # the bound stays as set below
    real_claimed, asked = claims.claimed, []

    def claimed_as_the_drain_lands(db, queue, **options):
        if options.get("after") is not None and not asked:
            asked.append(True)
            worker.stop(drain=True)  # lands while this claim still reads the old bound
        return real_claimed(db, queue, **options)

    monkeypatch.setattr(claims, "claimed", claimed_as_the_drain_lands)
    late = jobs.later(db, "default", "noop", {}, at=jobs.now_ms() - 10_000)
    worker.frontiers._bounds["default"] = (0, jobs.now_ms() + 3_600_000)  # as a look beside a held snapshot set it
    worker.start()
    try:
        assert worker.join(10)
    finally:
        worker.stop()
        worker.join(10)
    assert asked, "the claim never read the bound"
    assert scalar(db, "SELECT count(*) FROM jobs WHERE id = %s", (late,)) == 0


def test_a_look_that_runs_out_of_patience_never_moves_the_bound_back(db, held, monkeypatch):
    """The look's walk is cut off at LOOK_PATIENCE, however many dead entries the snapshot keeps; it looks
    again from the bound it had, and keeps that bound if that look is cut off too."""
    worked_through(db, DEAD)
    jobs.later(db, "default", "noop", {})
    monkeypatch.setattr(frontier, "OLD_SNAPSHOT", 0.0)
    monkeypatch.setattr(frontier, "LOOK_PATIENCE", 0.001)  # less than walking DEAD * 2 dead entries takes
    frontiers = frontier.Frontiers()
    frontiers._bounds["default"] = (0, 1234)  # the bound an earlier, patient look set
    assert frontiers.looked(db, ["default"]) is False
    due = db.execute("SELECT priority, run_at FROM jobs WHERE attempts = 0").fetchone()
    assert frontiers.bound("default") in [(0, 1234), (due[0], due[1] - frontier.SLACK)]
