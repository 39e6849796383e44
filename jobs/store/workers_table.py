"""The workers table, job_workers: each worker's row, its heartbeat, and the reaper's judgement of who is gone.

A Worker registers before any of its threads claims (runtime/watchdog.py's Heartbeat does it), and its
claims record its id on the jobs they hold. Its heartbeat moves its own row's beat_at
on every lease / BEATS, never a job's row. Every worker's reaper (maintenance.py) takes a
worker silent for SILENT of its lease for gone, and lets the leases of the jobs it held
run out then, so they come back within one lease of its last beat. It speaks SQL only.
"""

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ..core.sql import one, read_once

queries = read_once(Path(__file__).with_name("queries.sql"))  # store/'s statements, by name

BEATS = 4  # heartbeats per lease; the reaper of each worker runs as often
SILENT = 0.75  # of its lease: a worker whose last beat is older is taken for gone (three beats missed)
KEPT = 3600.0  # seconds the row of a worker gone stays listed, before the reaper deletes it


@dataclass(frozen=True)
class Registration:
    """What a worker's row in job_workers says of it."""

    id: int  # chosen at random by the worker; its claims mark the jobs they hold with it
    queues: list[str]
    threads: int
    lease: float  # seconds
    version: int  # the schema version its code needs


def registered(db: psycopg.Connection[Any], worker: Registration) -> str | None:
    """Writes `worker`'s row (or takes it back); answers how it had ended, when a reaper had marked it gone."""
    params = {
        "id": worker.id,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "queues": worker.queues,
        "threads": worker.threads,
        "lease": round(worker.lease * 1000),
        "version": worker.version,
        "now": None,
    }
    ended: str | None = one(db.execute(queries["register"], params))[0]
    return ended


def beaten(db: psycopg.Connection[Any], worker_id: int) -> bool:
    """Moves the worker's last beat to now; False when its row is gone or marked gone (register again)."""
    return db.execute(queries["beat"], {"id": worker_id, "now": None}).fetchone() is not None


def signed_off(db: psycopg.Connection[Any], worker_id: int) -> None:
    """Marks the worker's row stopped: a clean stop, with nothing held."""
    db.execute(queries["sign_off"], {"id": worker_id, "now": None})


def orphans_lapsed(db: psycopg.Connection[Any], now: int | None = None) -> list[tuple[int, int]]:
    """Takes silent workers for gone and lets the leases of jobs held by gone workers run out; answers (job, worker)
    pairs."""
    return db.execute(queries["orphans"], {"silent": SILENT, "now": now}).fetchall()


def pruned(db: psycopg.Connection[Any], now: int | None = None) -> int:
    """Deletes the rows of workers gone for longer than KEPT; answers how many."""
    return db.execute(queries["workers_pruned"], {"kept": round(KEPT * 1000), "now": now}).rowcount


def listed(db: psycopg.Connection[Any], now: int | None = None) -> list[dict[str, Any]]:
    """The workers at work and those gone within KEPT, newest first, as dicts (the columns of job_workers,
    `now` the database's moment, `holding` the jobs each holds, and `state`: working, silent, stopped or gone)."""
    with db.cursor(row_factory=dict_row) as cursor:
        rows = cursor.execute(queries["workers"], {"kept": round(KEPT * 1000), "now": now}).fetchall()
    for row in rows:
        row["state"] = state_of(row)
    return rows


def state_of(row: dict[str, Any]) -> str:
    """How a worker's row reads: "working", "silent" (not beating, not yet taken for gone), "stopped" or "gone"."""
    if row["ending"] == "stopped":
        return "stopped"
    if row["ending"] is not None:
        return "gone"
    return "silent" if row["now"] - row["beat_at"] > row["lease"] * SILENT else "working"


def let_go_recorded(db: psycopg.Connection[Any], rows: list[tuple[int, int]]) -> None:
    """Records in job_let_go the (id, claim) rows whose performer runs on while they are settled without it."""
    db.execute(queries["let_go_recorded"], {"ids": [id for id, _ in rows], "claims": [claim for _, claim in rows]})


def let_go_forgotten(db: psycopg.Connection[Any], rows: list[tuple[int, int]]) -> None:
    """Deletes the job_let_go rows of (id, claim) whose performer has returned: their room is free again."""
    db.execute(queries["let_go_forgotten"], {"ids": [id for id, _ in rows], "claims": [claim for _, claim in rows]})


def let_go_pruned(db: psycopg.Connection[Any]) -> None:
    """Deletes the rows workers gone left in job_let_go, for the reaper."""
    db.execute(queries["let_go_pruned"])
