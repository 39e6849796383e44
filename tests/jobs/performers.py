"""Performers that worker processes started by the tests load with --performers.

Each records its runs in the table `runs` on the job's own transaction, so a run
counts only if its job's settlement committed: the count is what "exactly once" means.
"""

import os
import random
import time

import jobs

RUNS = "CREATE TABLE IF NOT EXISTS runs (job bigint NOT NULL, pid int NOT NULL, attempt int NOT NULL)"


def record(db, args):
    """Records this run of the job."""
    job = jobs.current_job()
    db.execute("INSERT INTO runs (job, pid, attempt) VALUES (%s, %s, %s)", (job.id, os.getpid(), job.attempt))


def slow_first_time(db, args):
    """Hangs on its first attempt (long enough to be killed), then runs at once."""
    if jobs.current_job().attempt == 1:
        time.sleep(args.get("seconds", 60))
    record(db, args)


def hold(db, args):
    """Runs for `seconds`, then records its run."""
    time.sleep(args["seconds"])
    record(db, args)


@jobs.policy(backoff=jobs.intervals(0, 0, 0, 0, 0, 0, 0, 0, 0))
def flaky(db, args):
    """Fails at random, as often as `chance` says, retrying at once; records its successful run."""
    if random.random() < args.get("chance", 0.2):
        raise RuntimeError("flaked")
    record(db, args)


performers = {"record": record, "slow_first_time": slow_first_time, "hold": hold, "flaky": flaky}


def span(db, args):
    """Records when it began and ended, on a connection of its own, so overlaps show across workers."""
    import psycopg

    job = jobs.current_job()
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as own:
        began = own.execute("SELECT clock_timestamp()").fetchone()[0]
        time.sleep(args["seconds"])
        own.execute("INSERT INTO spans VALUES (%s, %s, %s, clock_timestamp())", (job.id, job.key, began))


performers["span"] = span

STARTS = "CREATE TABLE IF NOT EXISTS starts (job bigint NOT NULL, pid int NOT NULL)"


def started_then_held(db, args):
    """Records that it started, on a connection of its own (so even an attempt that never settles counts).

    Then it runs for `seconds`, and with `record` records its run as `record` does.
    """
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as own:
        own.execute("INSERT INTO starts VALUES (%s, %s)", (jobs.current_job().id, os.getpid()))
    time.sleep(args["seconds"])
    if args.get("record"):
        record(db, args)


performers["started_then_held"] = started_then_held


@jobs.policy(attempts=1)
def once(db, args):
    """started_then_held with one attempt in all, as jobs.NO_RETRY allows."""
    started_then_held(db, args)


performers["once"] = once


NOTES = "CREATE TABLE IF NOT EXISTS notes (job bigint, name text, batch bigint, args jsonb)"


def note(db, args):
    """Records its name, batch and arguments on the job's own transaction."""
    import json

    job = jobs.current_job()
    db.execute("INSERT INTO notes VALUES (%s, %s, %s, %s)", (job.id, job.name, job.batch, json.dumps(args)))


@jobs.policy(attempts=1)
def doomed(db, args):
    """Fails for good on its first attempt."""
    raise RuntimeError("doomed")


for _name in ("step", "row", "done", "failed", "finished"):
    performers[_name] = note
performers["doomed"] = doomed


CHAOS_RETRY = 0.2  # seconds a chaotic job waits before its retry


@jobs.policy(backoff=jobs.intervals(CHAOS_RETRY, CHAOS_RETRY, CHAOS_RETRY))
def chaotic(db, args):
    """Fails its first attempt when `fails` says so, then records its run."""
    if args["fails"] and jobs.current_job().attempt == 1:
        raise RuntimeError("chaos")
    record(db, args)


performers["chaotic"] = chaotic


@jobs.policy(backoff=jobs.intervals(0), timeout=1)
def hangs_first_time(db, args):
    """Writes on its first attempt, then hangs far past its timeout of 1 s; the second attempt records its run."""
    if jobs.current_job().attempt == 1:
        started_then_held(db, {"seconds": 0})
        record(db, args)  # written on the job's transaction, which must never commit
        time.sleep(60)
    record(db, args)


performers["hangs_first_time"] = hangs_first_time


TICKS = "CREATE TABLE IF NOT EXISTS ticks (schedule text NOT NULL, tick bigint NOT NULL, pid int NOT NULL)"


def tick(db, args):
    """Records the tick its schedule queued it for (its due moment, in ms) on the job's own transaction."""
    db.execute("INSERT INTO ticks VALUES (%s, %s, %s)", (args["schedule"], jobs.current_job().due_at, os.getpid()))


performers["tick"] = tick


EFFECTS = """CREATE TABLE IF NOT EXISTS effects (
    n int PRIMARY KEY, runs int NOT NULL DEFAULT 1, pid int NOT NULL,
    done_at timestamptz NOT NULL DEFAULT clock_timestamp())"""


def effect(db, args):
    """Works `ms` milliseconds, then writes the row of its `n` on the job's transaction.

    A second run of the same `n` that commits counts in `runs` instead of failing, so
    a test can count every duplicate; `done_at` gives the completions per second.
    """
    time.sleep(args.get("ms", 0) / 1000)
    db.execute(
        "INSERT INTO effects (n, pid) VALUES (%s, %s) ON CONFLICT (n) DO UPDATE SET runs = effects.runs + 1",
        (args["n"], os.getpid()),
    )


performers["effect"] = effect


REFUSALS = """CREATE TABLE IF NOT EXISTS refusal_parents (id int PRIMARY KEY);
CREATE TABLE IF NOT EXISTS refusal_children (
    parent int NOT NULL REFERENCES refusal_parents (id) DEFERRABLE INITIALLY DEFERRED)"""


@jobs.policy(backoff=jobs.intervals(CHAOS_RETRY, CHAOS_RETRY, CHAOS_RETRY, CHAOS_RETRY))
def refused_first_time(db, args):
    """effect, whose first attempt also writes a row the COMMIT refuses (a deferred foreign key with no parent)."""
    effect(db, args)
    if jobs.current_job().attempt == 1:
        db.execute("INSERT INTO refusal_children VALUES (-1)")


performers["refused_first_time"] = refused_first_time
