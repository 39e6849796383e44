"""Where a one-thread drain's time goes: the client's CPU per job beside plain SQL's, and what the session clean adds.

`python -m tests.benchmarks.cost` (not part of the tests) drains `--jobs` no-op jobs with
one Worker of one thread, and as many rows with plain SQL's claim 100 + delete on one
connection, in turns, `--rounds` times; for each it prints the wall time and the process's
CPU time (user + system) per job, from the moment the drain is let go to its end. What is
not CPU is time spent waiting on the server, for the same two statements a batch; where
the two waits come out alike, the gap in wall time is the gap in CPU: the Python a queue
runs per job (a Job, its performer's call, its outcome) where plain SQL's loop runs none.
It then times a job's transaction (BEGIN, one INSERT, COMMIT) with COMMIT alone and with
the statements a worker sends with its COMMIT to clean the session (transaction.CLEAN), in
turns, TRANSACTIONS of each a round. CPU figures move far less from run to run than rates.
Last, the time around one idle claim: a work thread's claim on an empty queue (the holdings,
the pulse, the claim's bound and its limits around the statement) beside the same claim
statement sent bare on one connection, in turns, CLAIMS of each a round, the median kept.
"""

import argparse
import os
import resource
import statistics
import sys
import time

import jobs
from jobs.runtime import transaction
from jobs.runtime.work_thread import WorkThread
from jobs.store import claims

from . import database, plain, queue, timing, writing

JOBS = 20_000  # no-op jobs each drain settles, as the main benchmark's drains
ROUNDS = 3  # rounds, the median of each figure kept
TRANSACTIONS = 1000  # job transactions timed a round, with COMMIT alone and with the clean
CLAIMS = 500  # idle claims timed a round, a work thread's and the bare statement's, in turns


def cpu_seconds() -> float:
    """This process's CPU time so far, its threads' user and system time together."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class Clocked:
    """A gate that notes the process's CPU time at the moment it lets the drain go."""

    def __init__(self, gate) -> None:
        self.gate, self.started = gate, 0.0

    def wait(self) -> None:
        self.gate.wait()
        self.started = cpu_seconds()


def jobs_drained(url: str, gate) -> tuple[int, float]:
    """One Worker of one thread drains the queue; answers the jobs it ran and the CPU seconds its process spent."""
    clock = Clocked(gate)
    processed = queue.drained(url, clock)
    return processed, cpu_seconds() - clock.started


def plain_drained(url: str, gate) -> tuple[int, float]:
    """Plain SQL's claim 100 + delete on one connection; answers the rows it settled and the CPU seconds spent."""
    clock = Clocked(gate)
    settled = plain.drained(url, writing.BATCH, clock)
    return settled, cpu_seconds() - clock.started


def drain(url: str, count: int, table: str, target) -> tuple[float, float]:
    """Fills `table` with `count` due rows and drains it in a process of its own: (wall, CPU) seconds per job."""
    with database.connected(url) as db:
        database.filled(db, table, database.due(count))
    seconds, [(settled, cpu)] = timing.together(target, [(url,)])
    if settled != count:
        raise RuntimeError(f"{target.__name__} settled {settled} of {count} rows")
    return seconds / count, cpu / count


def transaction_time(url: str, commit: str) -> float:
    """Seconds per job transaction (BEGIN, the writing job's INSERT, `commit`) over TRANSACTIONS of them."""
    with database.connected(url) as db:
        db.execute(writing.WRITTEN)
        db.execute("TRUNCATE written")
        cursor, ending = db.cursor(), commit.format(clean=transaction.cleaning(db))
        started = time.perf_counter()
        for n in range(TRANSACTIONS):
            cursor.execute("BEGIN")
            cursor.execute(plain.statements["written"], {"n": n})
            cursor.execute(ending)
        return (time.perf_counter() - started) / TRANSACTIONS


def idle_claims(url: str) -> tuple[float, float]:
    """Median seconds of a work thread's claim on the empty queue, and of the bare claim statement, in turns."""
    worker = jobs.Worker(database.connector(url), [database.QUEUE], queue.PERFORMERS)
    thread = WorkThread(0, worker.settings, worker.parts, lambda work, error: None)
    params = claims.claim_params(
        database.QUEUE, None, None, claims.Hold(worker=worker.id, budgets=worker.settings.budgets)
    )
    statement = claims.claim_statement(1)
    ours: list[float] = []
    bare: list[float] = []
    with database.connected(url) as db:
        database.emptied(db, queue.TABLE)
        cursor = db.cursor()
        for _ in range(CLAIMS):
            started = time.perf_counter()
            thread._claimed(db, database.QUEUE)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            cursor.execute(statement, params).fetchall()
            bare.append(time.perf_counter() - started)
    worker.watchdog.stop()
    return statistics.median(ours), statistics.median(bare)


def measured(url: str, count: int, rounds: int) -> dict[str, list]:
    """Every figure of the report, one per round; the measures take turns within a round."""
    figures: dict[str, list] = {"jobs": [], "plain": [], "commit": [], "clean": [], "claim": []}
    for round in range(1, rounds + 1):
        print(f"round {round} of {rounds} ...", file=sys.stderr, flush=True)
        figures["jobs"].append(drain(url, count, queue.TABLE, jobs_drained))
        figures["plain"].append(drain(url, count, plain.TABLE, plain_drained))
        figures["commit"].append(transaction_time(url, "COMMIT"))
        figures["clean"].append(transaction_time(url, "COMMIT; {clean}"))
        figures["claim"].append(idle_claims(url))
    return figures


def printed(figures: dict[str, list], count: int, machine: str) -> str:
    """The report: the median of the rounds of each figure, in µs."""

    def median(key: str, part: int | None = None) -> float:
        values = figures[key] if part is None else [figure[part] for figure in figures[key]]
        return statistics.median(values) * 1e6

    def row(what: str, ours: float, theirs: float, after: str = "") -> str:
        return f"  {what:34}{ours:10.1f}{theirs:12.1f}{ours - theirs:15.1f}{after}"

    wall, cpu = (median("jobs", 0), median("plain", 0)), (median("jobs", 1), median("plain", 1))
    commit, clean = median("commit"), median("clean")
    claim, bare = median("claim", 0), median("claim", 1)
    return "\n".join(
        [
            machine,
            f"one-thread drain of {count:,} no-op jobs, median of {len(figures['jobs'])} round(s), µs per job",
            f"  {'':34}{'jobs':>10}{'plain SQL':>12}{'jobs - plain':>15}",
            row("wall time", *wall, f"   rate, jobs / plain: {wall[1] / wall[0]:.2f}"),
            row("CPU time of the process", *cpu),
            row("the rest: waiting on the server", wall[0] - cpu[0], wall[1] - cpu[1]),
            f"a job's transaction (BEGIN, INSERT, COMMIT), median of {len(figures['commit'])} round(s), µs",
            f"  COMMIT alone {commit:.1f}, with the session clean {clean:.1f}: {clean - commit:+.1f}",
            f"one idle claim on an empty queue, median of {CLAIMS} a round, of {len(figures['claim'])} round(s), µs",
            f"  a work thread's {claim:.1f}, the bare statement {bare:.1f}: the time around it {claim - bare:+.1f}",
        ]
    )


def main(argv=None) -> int:
    options = argparse.ArgumentParser(prog="python -m tests.benchmarks.cost", description=__doc__.splitlines()[0])
    options.add_argument("--jobs", type=int, default=JOBS, metavar="N", help=f"jobs per drain (default {JOBS:,})")
    options.add_argument(
        "--rounds", type=int, default=ROUNDS, metavar="R", help=f"rounds, the median kept (default {ROUNDS})"
    )
    options.add_argument("--database-url", default=os.environ.get("DATABASE_URL"), metavar="URL")
    args = options.parse_args(argv)
    if args.jobs < 100 or args.rounds < 1:
        options.error("--jobs takes 100 or more, --rounds 1 or more")
    with database.database_at(args.database_url) as url:
        database.made(url)
        try:
            machine = f"{database.described(url)}, {os.cpu_count()} cores"
            figures = measured(url, args.jobs, args.rounds)
        finally:
            database.dropped(url)
    print(printed(figures, args.jobs, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
