"""Each queue's figures: every job counted in exactly one state at a moment the test chooses."""

import jobs

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch


@jobs.policy(attempts=1)
def doomed(db, args):
    raise RuntimeError("doomed")


def test_status_of_an_empty_table_is_empty(db):
    assert jobs.status(db, now=T) == []


UNLIMITED = {
    "limit_rate": None,
    "limit_per_ms": None,
    "limit_concurrency": None,
    "limit_per_key": None,
    "limit_used": 0,
    "held_back": 0,
}


def test_status_counts_each_queue_s_jobs_by_state(db):
    jobs.later(db, "default", "doomed", {}, T - 20_000)
    jobs.worked(db, "default", {"doomed": doomed}, T - 20_000)  # failed for good
    jobs.later(db, "default", "note", {}, T - 9000)  # due for 9 s
    jobs.later(db, "default", "note", {}, T - 1000)  # due for 1 s
    jobs.later(db, "default", "note", {}, T + 60_000)  # scheduled
    jobs.later(db, "mail", "note", {}, T + 3_600_000)  # scheduled, on another queue
    jobs.later(db, "default", "observe", {}, T - 5000, priority=-1)  # in work when it looks
    seen = []
    jobs.worked(db, "default", {"observe": lambda conn, args: seen.append(jobs.status(conn, now=T))}, T)
    assert seen == [
        [
            {
                "queue": "default",
                "due": 2,
                "scheduled": 1,
                "in_work": 1,
                "failed": 1,
                "oldest_due_age": 9.0,
                "paused": False,
                **UNLIMITED,
                "estimated": [],
            },
            {
                "queue": "mail",
                "due": 0,
                "scheduled": 1,
                "in_work": 0,
                "failed": 0,
                "oldest_due_age": None,
                "paused": False,
                **UNLIMITED,
                "estimated": [],
            },
        ]
    ]


def test_a_job_whose_lease_ran_out_counts_as_due_again(db):
    jobs.later(db, "default", "observe", {}, T)
    seen = []

    def observe(conn, args):
        seen.append(jobs.status(conn, now=T + 500))  # within its 1 s lease
        seen.append(jobs.status(conn, now=T + 4000))  # its lease ran out 3 s ago

    jobs.worked(db, "default", {"observe": observe}, T, lease=1.0)
    assert [[(q["due"], q["in_work"], q["oldest_due_age"]) for q in figures] for figures in seen] == [
        [(0, 1, None)],
        [(1, 0, 3.0)],
    ]


def shelve_many(db, queue: str, count: int) -> None:
    """Puts `count` jobs of `queue` straight on the shelf."""
    jobs.later_many(db, queue, "doomed", [{}] * count, T)
    db.execute("UPDATE jobs SET max_attempts = 0 WHERE queue = %s", (queue,))


def test_a_count_past_STATUS_EXACT_is_said_to_be_an_estimate_and_never_below_what_was_counted(db, monkeypatch):
    monkeypatch.setattr(jobs.store.shelf, "STATUS_EXACT", 3)
    shelve_many(db, "big", 10)
    shelve_many(db, "small", 2)  # the table is new to VACUUM and ANALYZE: the index's size is not known yet
    figures = {q["queue"]: q for q in jobs.status(db, now=T)}
    assert (figures["big"]["failed"], figures["big"]["estimated"]) == (4, ["failed"]), "at least the 4 counted"
    assert (figures["small"]["failed"], figures["small"]["estimated"]) == (2, [])
    db.execute("ANALYZE jobs")  # what autovacuum does: the shelf's index now says it holds 12
    figures = {q["queue"]: q for q in jobs.status(db, now=T)}
    assert (figures["big"]["failed"], figures["big"]["estimated"]) == (10, ["failed"]), "12 on the shelf, 2 of small"


def test_counts_up_to_STATUS_EXACT_are_exact_beside_a_larger_shelf(db, monkeypatch):
    monkeypatch.setattr(jobs.store.shelf, "STATUS_EXACT", 3)
    shelve_many(db, "default", 10)
    jobs.later(db, "default", "note", {}, T - 1000)
    jobs.later(db, "default", "note", {}, T + 1000)
    (figures,) = jobs.status(db, now=T)
    assert (figures["due"], figures["scheduled"], figures["estimated"]) == (1, 1, ["failed"])


def test_a_paused_queue_shows_in_status_even_with_no_jobs(db):
    jobs.later(db, "default", "note", {}, T)
    jobs.paused(db, "mail")
    assert [(q["queue"], q["due"], q["paused"]) for q in jobs.status(db, now=T)] == [
        ("default", 1, False),
        ("mail", 0, True),
    ]
