"""`python -m tests.benchmarks`: jobs beside the plain-SQL limits, measured in one run on one database.

Runs the columns of issue 7's table (and the scale and memory checks), then prints
the table, the ratios and a verdict per goal. Progress goes to stderr, the report to
stdout. It empties and drops a schema of its own (database.SCHEMA) and nothing else.
"""

import argparse
import os
import sys
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from . import asynchronous, checks, database, limited, plain, plot, pressure, queue, report, shelf, timing, writing

DEFAULT_JOBS = 20_000  # jobs each drain settles; every other size follows from it (see `sized`)
DEFAULT_ROUNDS = 3  # times each rate and latency is measured; the best round is kept
BATCH = 100  # rows a claim takes in the plain "claim 100 + delete the batch" limit
MOST_CONNECTIONS = 4  # processes of the plain limits' best setting; the machine has 2 cores
DRAIN_PROCESSES = (1, 2, 4)  # worker processes tried for jobs' best drain


@dataclass(frozen=True)
class Sizes:
    """How much each measurement does."""

    drain: int  # jobs per drain, jobs' and the plain claim-100 ones
    one_by_one: int  # jobs per run that moves one job per statement: plain claim-1 drains, enqueues
    bulk: int  # jobs per bulk enqueue
    latency: int  # enqueue→start samples, and claims timed in the scale check
    waiting: int  # rows waiting in the future or failed for good in the scale check; of each kind in the shelf check
    memory: int  # jobs the worker of the memory check drains
    rounds: int  # times each rate, latency and claim time is measured, the best kept
    pressure_seconds: float = pressure.SECONDS  # seconds the pressure column's producer offers its rate
    pressure_processes: int = pressure.PROCESSES  # worker processes of the pressure column


def sized(
    jobs: int, rounds: int, pressure_seconds: float = pressure.SECONDS, pressure_processes: int = pressure.PROCESSES
) -> Sizes:
    """The sizes of a run whose drains settle `jobs` jobs (DEFAULT_JOBS: 200 samples, 1,000,000 waiting rows)."""
    return Sizes(
        drain=jobs,
        one_by_one=max(1, jobs // 10),
        bulk=jobs * 5,
        latency=min(200, max(20, jobs // 100)),
        waiting=jobs * 50,
        memory=jobs * 10,
        rounds=rounds,
        pressure_seconds=pressure_seconds,
        pressure_processes=pressure_processes,
    )


def drain_at_best(url: str, sizes: Sizes, figures: dict) -> None:
    """jobs with 1, 2 and 4 worker processes; the plain limits on 4 connections."""
    measured(
        figures,
        sizes.rounds,
        [
            *(
                (f"jobs drain {n}", partial(queue.drain_rate, url, sizes.drain, n))
                for n in DRAIN_PROCESSES
                if f"jobs drain {n}" not in figures
            ),
            ("plain batch 4", partial(plain.drain_rate, url, sizes.drain, BATCH, MOST_CONNECTIONS)),
            ("plain one 4", partial(plain.drain_rate, url, sizes.one_by_one, 1, MOST_CONNECTIONS)),
        ],
    )


def drain_at_one(url: str, sizes: Sizes, figures: dict) -> None:
    """jobs with one worker process of one thread; the plain limits on one connection."""
    measured(
        figures,
        sizes.rounds,
        [
            ("jobs drain 1", partial(queue.drain_rate, url, sizes.drain, 1)),
            ("plain batch 1", partial(plain.drain_rate, url, sizes.drain, BATCH, 1)),
            ("plain one 1", partial(plain.drain_rate, url, sizes.one_by_one, 1, 1)),
        ],
    )


def writing_jobs(url: str, sizes: Sizes, figures: dict) -> None:
    """Jobs that each INSERT a row, with 1 and writing.WRITING_THREADS work threads; plain SQL, a transaction per
    job."""
    measured(
        figures,
        sizes.rounds,
        [
            (f"{who} writing {n}", partial(measure, url, sizes.one_by_one, n))
            for n in (1, writing.WRITING_THREADS)
            for who, measure in (("jobs", writing.rate), ("plain", writing.plain_rate))
        ]
        + [
            (
                f"plain threads writing {writing.WRITING_THREADS}",
                partial(writing.plain_threaded_rate, url, sizes.one_by_one, writing.WRITING_THREADS),
            )
        ],
    )


def enqueue(url: str, sizes: Sizes, figures: dict) -> None:
    """`jobs.later` one per transaction; plain INSERT, with and without pg_notify."""
    measured(
        figures,
        sizes.rounds,
        [
            ("enqueue", partial(queue.enqueue_rate, url, sizes.one_by_one)),
            ("plain insert", partial(plain.enqueue_rate, url, sizes.one_by_one, notify=False)),
            ("plain notify", partial(plain.enqueue_rate, url, sizes.one_by_one, notify=True)),
        ],
    )


def in_async(url: str, sizes: Sizes, figures: dict) -> None:
    """`await jobs.later` and a plain INSERT (with and without pg_notify) on an AsyncConnection; the drain of async
    performers and of sync ones."""
    measured(
        figures,
        sizes.rounds,
        [
            ("async enqueue", partial(asynchronous.enqueue_rate, url, sizes.one_by_one)),
            ("async plain insert", partial(asynchronous.plain_enqueue_rate, url, sizes.one_by_one)),
            ("async plain notify", partial(asynchronous.plain_enqueue_rate, url, sizes.one_by_one, notify=True)),
            ("async drain", partial(asynchronous.drain_rate, url, sizes.drain)),
            ("sync drain", partial(queue.drain_rate, url, sizes.drain, 1)),
        ],
    )


def in_limits(url: str, sizes: Sizes, figures: dict) -> None:
    """The claim of a queue with no limit, before limits and at a rate's edge; the latency under a limit."""
    measured(figures, 1, [("limits", partial(limited.measure, url, sizes.latency, sizes.rounds))])


def bulk(url: str, sizes: Sizes, figures: dict) -> None:
    """`jobs.later_many` when jobs has it; plain COPY."""
    measured(
        figures,
        sizes.rounds,
        [
            ("bulk", partial(queue.bulk_rate, url, sizes.bulk)),
            ("plain copy", partial(plain.copy_rate, url, sizes.bulk)),
        ],
    )


def latency(url: str, sizes: Sizes, figures: dict) -> None:
    """enqueue→start with an idle Worker; with a plain LISTEN-then-claim loop."""
    measured(
        figures,
        sizes.rounds,
        [
            ("latency", partial(queue.latencies, url, sizes.latency)),
            ("plain latency", partial(plain.latencies, url, sizes.latency)),
        ],
    )


def scale(url: str, sizes: Sizes, figures: dict) -> None:
    """The claim on an empty table and beside the waiting rows (its rounds are inside: one filling serves them all)."""
    measured(figures, 1, [("scale", partial(checks.scale, url, sizes.waiting, sizes.latency, sizes.rounds))])


def shelf_at_scale(url: str, sizes: Sizes, figures: dict) -> None:
    """status, the shelf's pages, the dashboard's and the whole-shelf operations beside `waiting` failed and as many
    scheduled jobs."""
    pages = shelf.dashboard_pages(url, sizes.waiting)
    measured(figures, 1, [("shelf", partial(shelf.shelf, url, sizes.waiting, pages))])


def under_pressure(url: str, sizes: Sizes, figures: dict) -> None:
    """Worker processes of pressure.THREADS threads under a steady offer of short jobs, measured once."""
    run = partial(pressure.pressure, url, sizes.pressure_seconds, sizes.pressure_processes)
    measured(figures, 1, [("pressure", run)])


def memory(url: str, sizes: Sizes, figures: dict) -> None:
    """A worker process's resident memory at both ends of a long drain."""
    measured(figures, 1, [("memory", partial(checks.memory, url, sizes.memory))])


def measured(figures: dict, rounds: int, measures: list) -> None:
    """Runs each (key, measure) `rounds` times and keeps the best round's figure under its key.

    The measures take turns within a round, so jobs and its plain-SQL limits meet the
    same passing disturbances; each line on stderr says how long one took.
    """
    results: dict[str, list] = {key: [] for key, _ in measures}
    for round in range(1, rounds + 1):
        for key, measure in measures:
            print(f"  {key}, round {round} ...", end="", file=sys.stderr, flush=True)
            started = time.monotonic()
            results[key].append(measure())
            print(f" {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    figures.update((key, best(values)) for key, values in results.items())


def best(results: list):
    """The round least disturbed by anything else on the machine: the highest rate, the lowest median latency."""
    if isinstance(results[0], list):
        return min(results, key=timing.median)
    if isinstance(results[0], float):
        return max(results)
    return results[0]  # a check, measured once; or None, a figure jobs cannot give yet


# In the order they run: the drains first (drain-1 before drain-best, whose 1-process
# figure it provides), the minute of pressure, the long memory drain and the million rows of the
# scale and shelf checks last.
COLUMNS = {
    "latency": latency,
    "enqueue": enqueue,
    "bulk": bulk,
    "drain-1": drain_at_one,
    "drain-best": drain_at_best,
    "writing": writing_jobs,
    "async": in_async,
    "limits": in_limits,
    "pressure": under_pressure,
    "memory": memory,
    "scale": scale,
    "shelf": shelf_at_scale,
}


def parser() -> argparse.ArgumentParser:
    """The command line's options."""
    options = argparse.ArgumentParser(prog="python -m tests.benchmarks", description=__doc__.splitlines()[0])
    options.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        metavar="N",
        help=f"jobs per drain; every other size follows (default {DEFAULT_JOBS:,})",
    )
    options.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="R",
        help=f"times each rate and latency is measured, the best kept (default {DEFAULT_ROUNDS})",
    )
    options.add_argument(
        "--pressure-seconds",
        type=float,
        default=pressure.SECONDS,
        metavar="S",
        help=f"seconds the pressure column offers its jobs (default {pressure.SECONDS:g})",
    )
    options.add_argument(
        "--pressure-processes",
        type=int,
        choices=(1, 2),
        default=pressure.PROCESSES,
        metavar="N",
        help=f"worker processes of the pressure column, 1 or 2 (default {pressure.PROCESSES})",
    )
    options.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL"),
        metavar="URL",
        help="the database to measure on (default: DATABASE_URL, else a throw-away embedded PostgreSQL)",
    )
    options.add_argument(
        "--only",
        nargs="+",
        choices=list(COLUMNS),
        metavar="COLUMN",
        help=f"measure these columns only: {', '.join(COLUMNS)}",
    )
    options.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw the drain and latency figures beside plain SQL in this PNG (needs matplotlib)",
    )
    return options


def main(argv=None) -> int:
    """Measures the chosen columns and prints the report; answers the exit status."""
    args = parser().parse_args(argv)
    if args.jobs < 100 or args.rounds < 1 or not args.pressure_seconds > 0:
        parser().error("--jobs takes 100 or more, --rounds 1 or more, and --pressure-seconds more than 0")
    sizes = sized(args.jobs, args.rounds, args.pressure_seconds, args.pressure_processes)
    figures: dict[str, Any] = {}
    chosen = [name for name in COLUMNS if not args.only or name in args.only]
    with database.database_at(args.database_url) as url:
        database.made(url)
        machine = f"{database.described(url)}, {os.cpu_count()} cores"
        try:
            for name in chosen:
                print(f"{name}:", file=sys.stderr)
                COLUMNS[name](url, sizes, figures)
        finally:
            database.dropped(url)
    print(report.printed(figures, sizes, machine))
    if args.plot and not plot.plotted(figures, machine, args.plot):
        print(
            "no plot: --plot draws the drain-1, drain-best and latency columns, and none of them ran", file=sys.stderr
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
