"""Chains and batches: jobs that run one after another, or side by side with callbacks.

A chain is one job at a time: its first step carries the rest in its row's `flow`,
and when a step succeeds, the settlement transaction that deletes it queues the next
(running.py calls `settled`, and only it). So a chain survives a restart between two
steps. Chains and batches send statements of their own, named in queries.sql.

A batch is a row of job_batches counting its pending jobs. Each settlement of a job
of the batch counts down in the same transaction that deletes or fails the job, and
the statement that brings the count to nothing is the one that queues the callbacks:
which job was last is decided by the database, once (see batch_settled in
queries.sql). Callbacks are ordinary jobs on the batch's queue that know their batch.
"""

import contextlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg.rows import dict_row

from ..core import arguments
from ..core.job import Job
from . import claims, enqueue
from .schema import one, read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

Step = tuple[str, dict[str, Any]]  # a job of a chain or a batch, or a callback: (name, args)


class Settled(Protocol):
    """What `settled` reads of a settled job: a Job, or a row of a job's columns (control.py's cancels)."""

    queue: str
    batch: int | None
    flow: dict[str, Any] | None


def chain(db: psycopg.Connection[Any], queue: str, steps: Iterable[Step], on_failure: Step | None = None) -> int:
    """Queues `steps` ([(name, args), ...]) to run one after another on `queue`; returns the first's id.

    Each step runs only after the one before it succeeded, and is retried like any
    job. When a step fails for good, the steps after it never run and `on_failure`
    ((name, args), if given) is queued once. Written on db's current transaction.
    """
    steps = [(name, args) for name, args in steps]
    if not steps:
        raise ValueError("a chain needs at least one step")
    for name, args in steps + ([on_failure] if on_failure else []):
        arguments.encoded(queue, name, args)  # refuse a bad step now, before anything is written
    return queued_step(db, queue, steps, on_failure)


def queued_step(db: psycopg.Connection[Any], queue: str, steps: Sequence[Step], on_failure: Step | None) -> int:
    """Queues the first of `steps`, carrying the rest."""
    (name, args), rest = steps[0], steps[1:]
    flow = {"rest": [list(step) for step in rest], "on_failure": list(on_failure) if on_failure else None}
    job_id = enqueue.later(db, queue, name, args, flow=flow)
    assert job_id is not None, "a job without a unique key is always queued"
    return job_id


def batch(
    db: psycopg.Connection[Any],
    queue: str,
    members: Iterable[Step],
    on_success: Step | None = None,
    on_failure: Step | None = None,
    always: Step | None = None,
) -> int:
    """Queues `members` ([(name, args), ...]) as a batch on `queue` and returns the batch's id.

    The jobs run side by side. Callbacks, each (name, args) or None: on_success when
    every job has succeeded; on_failure when the first job has failed for good (once,
    however many fail); always when every job has run, however it went. A batch with
    no jobs has succeeded at once. Written on db's current transaction.
    """
    members = [(name, args) for name, args in members]
    callbacks = {"on_success": on_success, "on_failure": on_failure, "always": always}
    for name, args in members + [c for c in callbacks.values() if c]:
        arguments.encoded(queue, name, args)
    params: dict[str, Any] = {"queue": queue, "total": len(members), "now": None}
    params.update({k: None if v is None else json.dumps(list(v)) for k, v in callbacks.items()})
    with one_transaction(db):  # the batch and its jobs, all or nothing
        batch_id: int = one(db.execute(queries["new_batch"], params))[0]
        for name, args in members:
            enqueue.later(db, queue, name, args, batch=batch_id)
        if not members:
            counted(db, batch_id, settled=0, failed=0)
    return batch_id


def one_transaction(db: psycopg.Connection[Any]) -> contextlib.AbstractContextManager[object]:
    """A transaction for an autocommit connection; the caller's own otherwise, left open for it."""
    return db.transaction() if db.autocommit else contextlib.nullcontext()


def cancel_batch(db: psycopg.Connection[Any], batch_id: int) -> int:
    """Cancels a batch: its jobs not yet started are skipped, those running finish.

    on_success will not be queued; always will, when the last running job settles
    (at once, if none is running). Returns how many jobs were skipped.
    """
    with one_transaction(db):
        row = db.execute(queries["cancel_batch"], {"id": batch_id, "now": None}).fetchone()
        skipped: int = 0 if row is None else row[0]
        if row is not None:
            counted(db, batch_id, settled=skipped, failed=0)
    return skipped


def given_back(db: psycopg.Connection[Any], jobs: list[Job], now: int | None = None) -> list[str]:
    """Gives claimed jobs that never started back to the queue (claims.released); answers their queues.

    Those of a batch cancelled while they waited in a worker's hand are skipped then,
    as cancel_batch would have skipped them had they been waiting.
    """
    return sorted(
        {queue for _, queue, _, _ in released(db, [(job.id, job.claim or 0, job.due_at) for job in jobs], now)}
    )


def released(db: psycopg.Connection[Any], given: list[tuple[int, int, int]], now: int | None = None) -> list[Any]:
    """claims.released for (id, claim, due_at) rows, then the skips of their cancelled batches, in one transaction.

    Answers (id, queue, batch, callback) for each row given back: a row whose claim is no longer the one given (it
    was settled, or taken by another worker, meanwhile) is left as it is and not answered.
    """
    if not given:
        return []
    with one_transaction(db):
        rows = claims.released(db, given, now)
        for batch_id in sorted({batch for _, _, batch, callback in rows if batch is not None and not callback}):
            row = db.execute(queries["skip_given_back"], {"id": batch_id, "now": now}).fetchone()
            if row is not None and row[0]:
                counted(db, batch_id, settled=row[0], failed=0)
    return rows


def batch_status(db: psycopg.Connection[Any], batch_id: int) -> dict[str, Any] | None:
    """total, pending, failed, cancelled (jobs skipped), finished and cancelling; None if unknown."""
    with db.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(queries["batch_status"], {"id": batch_id}).fetchone()


def pruned(db: psycopg.Connection[Any], older_than: float) -> int:
    """Deletes batches that finished more than `older_than` seconds ago; returns how many."""
    params = {"older_than": round(older_than * 1000), "now": None}
    return db.execute(queries["prune_batches"], params).rowcount


def settled(db: psycopg.Connection[Any], done: Sequence[Settled], failed_for_good: Sequence[Settled]) -> None:
    """Moves chains and batches on after jobs settled, on the settlement's transaction.

    Called by the runner with the jobs that succeeded and those that failed for good;
    batches are counted in the order of their ids, so two settlements that touch the
    same batches lock them in the same order and never deadlock.
    """
    counts: dict[int, list[int]] = {}
    for job, ok in [(job, True) for job in done] + [(job, False) for job in failed_for_good]:
        flow = job.flow or {}
        if "rest" in flow:
            chain_moved_on(db, job, flow, ok)
        elif job.batch is not None and not flow.get("callback"):
            settled_and_failed = counts.setdefault(job.batch, [0, 0])
            settled_and_failed[0] += 1
            settled_and_failed[1] += 0 if ok else 1
    for batch_id in sorted(counts):
        counted(db, batch_id, *counts[batch_id])


def chain_moved_on(db: psycopg.Connection[Any], job: Settled, flow: dict[str, Any], ok: bool) -> None:
    """Queues a chain's next step after a success, or its on_failure after a failure for good."""
    if ok and flow["rest"]:
        queued_step(db, job.queue, flow["rest"], flow["on_failure"])
    elif not ok and flow["on_failure"]:
        name, args = flow["on_failure"]
        enqueue.later(db, job.queue, name, args)


def counted(db: psycopg.Connection[Any], batch_id: int, settled: int, failed: int) -> None:
    """Counts settled jobs of a batch, and queues the callbacks this count has earned."""
    params = {"id": batch_id, "settled": settled, "failed": failed, "now": None}
    row = db.execute(queries["batch_settled"], params).fetchone()
    if row is None:
        return  # the batch had already finished: nothing is counted twice
    last, first_failure, queue, on_success, on_failure, always, failed_jobs, cancelled = row
    earned = []
    if first_failure:
        earned.append(on_failure)
    if last and not failed_jobs and not cancelled:
        earned.append(on_success)
    if last:
        earned.append(always)
    for callback in filter(None, earned):
        name, args = callback
        enqueue.later(db, queue, name, args, batch=batch_id, flow={"callback": True})
