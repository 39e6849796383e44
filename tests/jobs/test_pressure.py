"""Chaos under a steady producer (issue 13): a database stopped and started, a worker killed, its backends killed.

Each test runs worker processes on a PostgreSQL of its own while a producer offers
RATE jobs a second, breaks something, and then asserts what an operator would watch:
completions are back at the offered rate soon after, nothing is lost, and nothing took
effect twice (each job writes its row on its own transaction, so a run whose
settlement was lost left nothing behind).
"""

import signal
import time

import pytest

import jobs
from tests.jobs.helpers import start_worker, stopped, wait_for
from tests.jobs.pressure import RATE, Producer, Watcher, per_second
from tests.jobs.private_pg import waited_until_up
from tests.jobs.test_restart import answered

pytestmark = pytest.mark.slow

STEADY = 3.0  # seconds of steady load before the chaos
RECOVERED_WITHIN = 5.0  # seconds after the database answers again (or a kill) by which the rate is back
WATCHED = 6.0  # seconds of steady load after that recovery whose completions are checked
KEPT_UP = 0.6  # share of the offered rate every watched second must reach (a 2-core machine is noisy)
OUTAGE = 6.0  # seconds the database stays stopped
LONG_JOB_MS = 1000  # milliseconds a job in hand when its backends are killed works
BACK_WITHIN = 10.0  # seconds by which such a job has run again: a third of jobs.LEASE, which it no longer waits out
THREADS = "16"


class Run:
    """Worker processes and the producer and watcher of one test, stopped and checked at the end."""

    def __init__(self, server, processes: int, *options):
        self.server, self.options = server, ("--threads", THREADS, *options)
        self.workers = [start_worker(server.url, "default", *self.options) for _ in range(processes)]
        wait_for(
            lambda: (
                answered(
                    server,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND application_name = 'jobs worker'",
                )
                == processes * (int(THREADS) + 2)
            ),
            "the workers to connect",
        )
        self.began = time.time()
        self.producer = Producer(server.url).start()
        self.watcher = Watcher(server.url).start()
        self.outputs: list[str] = []

    def finished(self, drained_within: float) -> dict[int, int]:
        """Stops the producer, waits for every job to be settled, stops the workers; returns runs by n."""
        self.producer.stop()
        try:
            wait_for(
                lambda: answered(self.server, "SELECT count(*) FROM jobs") == 0,
                "every job to be settled",
                timeout=drained_within,
            )
        finally:
            self.watcher.stop()
            self.outputs = [stopped(worker) for worker in self.workers]
        with self.server.connect() as db:
            self.seconds = per_second(db, self.began)
            return dict(db.execute("SELECT n, runs FROM effects"))

    def assert_exactly_once(self, runs: dict[int, int]) -> None:
        committed, uncertain = set(self.producer.committed), set(self.producer.uncertain)
        assert committed - set(runs) == set(), "no job was lost"
        assert set(runs) - committed - uncertain == set()
        assert {n: count for n, count in runs.items() if count > 1} == {}, "no job took effect twice"
        assert all(worker.returncode == 0 for worker in self.workers), self.outputs
        assert not any("is held by another worker" in output for output in self.outputs), "no false lease lost"

    def assert_kept_up(self, since: float, until: float) -> None:
        """Every whole second from `since` to `until` (s after the start) saw KEPT_UP of RATE completions."""
        watched = range(int(since) + 1, int(until))
        slow = {s: self.seconds.get(s, 0) for s in watched if self.seconds.get(s, 0) < KEPT_UP * RATE}
        assert slow == {}, f"completions per second: {self.seconds}; lock waits: {self.watcher.lock_waits()}"

    def moment(self) -> float:
        return time.time() - self.began

    def offered(self, seconds: float) -> None:
        """Returns once the producer has queued `seconds` more of its offer (outages make that longer)."""
        target = len(self.producer.committed) + seconds * RATE
        wait_for(lambda: len(self.producer.committed) >= target, f"{seconds:g} s more of the offer", every=0.05)


def test_the_rate_is_back_within_five_seconds_of_a_stopped_database_answering_again(private_postgres):
    server = private_postgres
    run = Run(server, 1)
    try:
        run.offered(STEADY)
        server.stop()
        time.sleep(OUTAGE)  # the outage itself: nothing to wait on but the clock
        server.start()
        waited_until_up(server)
        up = run.moment()
        run.offered(RECOVERED_WITHIN + WATCHED)
        end = run.moment()
        runs = run.finished(drained_within=10)
    finally:
        run.producer.stop()
    run.assert_exactly_once(runs)
    run.assert_kept_up(up + RECOVERED_WITHIN, end)
    assert run.producer.uncertain, "the producer met the outage"


def test_the_survivor_keeps_the_rate_while_its_neighbour_is_killed_twice(private_postgres):
    server = private_postgres
    run = Run(server, 2, "--lease", "3")
    try:
        run.offered(STEADY)
        kills = []
        for _ in range(2):
            run.workers[0].send_signal(signal.SIGKILL)
            run.workers[0].wait()
            kills.append(run.moment())
            run.workers[0] = start_worker(server.url, "default", *run.options)
            run.offered(STEADY)
        run.offered(RECOVERED_WITHIN + WATCHED - STEADY)
        end = run.moment()
        runs = run.finished(drained_within=10)
    finally:
        run.producer.stop()
    run.assert_exactly_once(runs)
    run.assert_kept_up(kills[0] + 1, kills[1])  # the survivor alone carries the rate between the kills
    run.assert_kept_up(kills[1] + RECOVERED_WITHIN, end)


def test_jobs_in_hand_when_a_workers_backends_are_killed_run_again_at_once(private_postgres):
    server = private_postgres
    run = Run(server, 1)
    long_jobs = range(1_000_000, 1_000_000 + int(THREADS) // 2)
    try:
        run.offered(STEADY)
        with server.connect() as db:
            jobs.later_many(db, "default", "effect", [{"n": n, "ms": LONG_JOB_MS} for n in long_jobs])
            wait_for(
                lambda: (
                    db.execute(
                        "SELECT count(*) FROM jobs WHERE (args->>'n')::int >= 1000000 AND attempts = 1"
                    ).fetchone()[0]
                    == len(long_jobs)
                ),
                "the long jobs' claims",
            )
            killed = db.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
                " AND application_name = 'jobs worker'"
            ).fetchone()[0]
            cut = time.monotonic()
            assert killed == int(THREADS) + 2
            wait_for(
                lambda: db.execute("SELECT count(*) FROM effects WHERE n >= 1000000").fetchone()[0] == len(long_jobs),
                "the long jobs to take effect",
                timeout=BACK_WITHIN,
            )
            again = time.monotonic() - cut
        kill = run.moment() - again
        run.offered(RECOVERED_WITHIN + WATCHED - again)
        end = run.moment()
        runs = run.finished(drained_within=10)
    finally:
        run.producer.stop()
    run.producer.committed += list(long_jobs)
    run.assert_exactly_once(runs)
    run.assert_kept_up(kill + RECOVERED_WITHIN, end)
    assert any("job(s) it held when cut off are due again at once" in output for output in run.outputs)
