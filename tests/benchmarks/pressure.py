"""The pressure column (issue 13): worker processes of many threads under a steady offer of short jobs.

`python -m jobs work` processes of THREADS threads work the benchmark's queue while the
chaos tests' Producer (tests/jobs/pressure.py) offers its RATE jobs a second of JOB_MS
each, and its Watcher samples the workers' backends every SAMPLE_EVERY seconds. It
measures what an operator pays for that rate: transactions, lock waits and CPU.
"""

import collections
import os
import time

from psycopg.conninfo import make_conninfo

from tests.jobs.helpers import start_command, stopped, wait_for
from tests.jobs.pressure import JOB_MS as JOB_MS  # report.py names the job length the column offers
from tests.jobs.pressure import Producer, Watcher

from . import database

THREADS = 32  # work threads of each worker process
PROCESSES = 1  # worker processes
SECONDS = 60.0  # seconds the producer offers its rate (--pressure-seconds)
SAMPLE_EVERY = 0.1  # seconds between two samples of the workers' backends in pg_stat_activity
DRAINED_WITHIN = 30.0  # seconds the workers may take to settle what is left once the offer stops
WORKER_NAME = "jobs worker"  # the application_name of a worker's connections (jobs.__main__.APPLICATION_NAME)
WARNING_WIDTH = 60  # characters of a warning kept to tell its kind
LOADED = "tests.benchmarks.pressure:PERFORMERS"  # what the worker processes load with --performers


def effect(db, args) -> None:
    """The Producer's job: it works `ms` milliseconds (JOB_MS) and writes nothing."""
    time.sleep(args["ms"] / 1000)


PERFORMERS = {"effect": effect}  # the performers the workers load (LOADED)


def pressure(url: str, seconds: float, processes: int = PROCESSES) -> dict:
    """One run: `processes` workers of THREADS threads under the offer for `seconds`; the figures of the run."""
    url = make_conninfo(url, options=f"-c search_path={database.SCHEMA}")  # the worker processes' schema too
    with database.connected(url) as db:
        database.emptied(db, "jobs")
        workers = [
            start_command(url, "work", database.QUEUE, "--performers", LOADED, "--threads", str(THREADS))
            for _ in range(processes)
        ]
        try:
            # A connection a work thread, one for the listener and one for the heartbeat.
            wait_for(lambda: backends(db) == processes * (THREADS + 2), "the workers to connect", timeout=60)
            figures = measured(db, url, seconds, workers)
        finally:
            logs = [stopped(worker) for worker in workers]
        figures["transactions"] = transactions(db) - figures.pop("transactions before") - figures["samples"]
    figures["warnings"] = collections.Counter(
        warning(line) for log in logs for line in log.splitlines() if " WARNING " in line
    )
    return figures


def measured(db, url: str, seconds: float, workers: list) -> dict:
    """The offer itself: the rate done, the workers' CPU and the backends' samples, until every job is settled."""
    before, cpu_before = transactions(db), cpu_seconds(workers)
    began = time.monotonic()
    producer = Producer(url, database.QUEUE).start()
    watcher = Watcher(url, every=SAMPLE_EVERY).start()
    try:
        time.sleep(seconds)  # the run is a stretch of steady load: nothing to wait on but the clock
    finally:
        producer.stop()
    wall, cpu = time.monotonic() - began, cpu_seconds(workers) - cpu_before
    done = len(producer.committed) - waiting(db)
    try:
        wait_for(lambda: waiting(db) == 0, "the workers to settle every job", timeout=DRAINED_WITHIN)
    finally:
        watcher.stop()
    rows = [row for _, rows in watcher.samples for row in rows]
    return {
        "offered": len(producer.committed) / wall,
        "done": done / wall,
        "jobs": len(producer.committed),
        "cpu": cpu / wall,
        "transactions before": before,
        "samples": len(watcher.samples),
        "backend samples": len(rows),
        "lock share": watcher.share_waiting_on_locks(),
        "snapshots waiting": sum(any(row[2] == "Lock" for row in rows) for _, rows in watcher.samples)
        / max(1, len(watcher.samples)),
        "waits": collections.Counter(f"{row[2]}/{row[3]}" for row in rows if row[2] is not None),
        "lock waits": watcher.lock_waits(),
    }


def backends(db) -> int:
    """The workers' connections to this database."""
    return db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
        (WORKER_NAME,),
    ).fetchone()[0]


def waiting(db) -> int:
    """The jobs not yet settled on the benchmark's queue."""
    return db.execute("SELECT count(*) FROM jobs WHERE queue = %s", (database.QUEUE,)).fetchone()[0]


def transactions(db) -> int:
    """Transactions committed and rolled back in this database so far, by every backend.

    A backend reports its counts at most once a second while busy, and at its exit:
    so the closing figure is read after the workers have exited.
    """
    return db.execute(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()[0]


def cpu_seconds(processes: list) -> float:
    """User and system CPU seconds the processes have used so far, from /proc/PID/stat (Linux)."""
    total = 0
    for process in processes:
        with open(f"/proc/{process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        total += int(fields[11]) + int(fields[12])  # utime and stime, fields 14 and 15 of proc(5)
    return total / os.sysconf("SC_CLK_TCK")


def warning(line: str) -> str:
    """A worker's WARNING line without its moment, process and job: the kind of warning it is."""
    said = line.split(" WARNING ", 1)[1].split(" ", 2)[-1]
    return said.split(":", 1)[0][:WARNING_WIDTH]
