"""Each queue's figures: every job counted in exactly one state at a moment the test chooses."""

import jobs

T = 1_000_000  # the moment the tests work their queues at, in ms since the epoch


@jobs.policy(attempts=1)
def doomed(db, args):
    raise RuntimeError("doomed")


def test_status_of_an_empty_table_is_empty(db):
    assert jobs.status(db, now=T) == []


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
    assert seen == [[
        {"queue": "default", "due": 2, "scheduled": 1, "in_work": 1, "failed": 1, "oldest_due_age": 9.0},
        {"queue": "mail", "due": 0, "scheduled": 1, "in_work": 0, "failed": 0, "oldest_due_age": None},
    ]]


def test_a_job_whose_lease_ran_out_counts_as_due_again(db):
    jobs.later(db, "default", "observe", {}, T)
    seen = []

    def observe(conn, args):
        seen.append(jobs.status(conn, now=T + 500))  # within its 1 s lease
        seen.append(jobs.status(conn, now=T + 4000))  # its lease ran out 3 s ago

    jobs.worked(db, "default", {"observe": observe}, T, lease=1.0)
    assert [[(q["due"], q["in_work"], q["oldest_due_age"]) for q in figures] for figures in seen] == [
        [(0, 1, None)], [(1, 0, 3.0)]]
