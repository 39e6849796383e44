"""What a worker reports and holds: its counters after a known run, and its connections under many threads."""

import jobs
from tests.jobs.helpers import scalar, start_worker, stopped, wait_for
from tests.jobs.test_processes import worker_connections


@jobs.policy(backoff=jobs.intervals(3600))
def retried_in_an_hour(db, args):
    raise RuntimeError("not yet")


@jobs.policy(attempts=1)
def doomed(db, args):
    raise RuntimeError("doomed")


def test_counts_tell_what_a_worker_did(db, connect):
    for name in ["fine", "fine", "fine", "retried_in_an_hour", "doomed", "nobody_performs_this"]:
        jobs.later(db, "default", name, {})
    performers = {"fine": lambda *_: None, "retried_in_an_hour": retried_in_an_hour, "doomed": doomed}
    worker = jobs.worker(connect, "default", performers)
    try:
        assert worker.wait_until_empty(10)
    finally:
        worker.stop()
        assert worker.join(10)
    assert worker.counts == jobs.Counts(processed=3, rescheduled=1, failed=1, dropped=1, lease_lost=0)


def test_a_worker_with_eight_threads_holds_at_most_ten_connections(runs, database_url):
    worker = start_worker(database_url, "default", "--threads", "8")
    held = []
    try:
        wait_for(
            lambda: worker_connections(runs) == 10, "eight work threads, the listener and the heartbeat to connect"
        )
        with runs.transaction():
            for _ in range(24):
                jobs.later(runs, "default", "hold", {"seconds": 0.3})

        def every_thread_busy():
            held.append(worker_connections(runs))
            return scalar(runs, "SELECT count(*) FROM jobs WHERE claim IS NOT NULL") == 8

        wait_for(every_thread_busy, "eight jobs in work at once")
        wait_for(lambda: held.append(worker_connections(runs)) or jobs.listed(runs) == [], "the queue to drain")
    finally:
        output = stopped(worker)
    assert max(held) == 10, output
    assert scalar(runs, "SELECT count(*) FROM runs") == 24
