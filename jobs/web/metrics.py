"""The dashboard's …/metrics: the queue's figures in Prometheus' text format, for a scraper.

Jobs per queue and state (as `status` counts them, an estimate past STATUS_EXACT, said
by jobs_count_estimated), the oldest due job's age, whether each queue is paused, the
limits of the limited queues (what is used of each, and the jobs each holds back), and
the counters of the worker handed to `jobs.web.app`, if one was: what this process did,
which of its queues it has heard are paused (it looks every POLL_INTERVAL), and how long
the jobs it claimed had been due, as a histogram over the buckets of WAIT_BUCKETS.
"""

from dataclasses import fields
from typing import Any

import psycopg

from ..store import shelf
from ..store.pulse import WAIT_BUCKETS, Waits
from ..store.shelf import has_limit
from .request import Answer, Request
from .wsgi import Dashboard

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text exposition format
STATES = ("due", "scheduled", "in_work", "failed")


def metrics(dashboard: Dashboard, request: Request, db: psycopg.Connection[Any]) -> Answer:
    """Every figure, one line each under its HELP and TYPE."""
    figures = shelf.status(db)
    lines = ["# HELP jobs_count Jobs in the table by queue and state.", "# TYPE jobs_count gauge"]
    lines += [
        f'jobs_count{{queue="{label(q["queue"])}",state="{state}"}} {q[state]}' for q in figures for state in STATES
    ]
    lines += [
        "# HELP jobs_count_estimated 1 where jobs_count is an estimate (past STATUS_EXACT jobs).",
        "# TYPE jobs_count_estimated gauge",
    ]
    lines += [
        f'jobs_count_estimated{{queue="{label(q["queue"])}",state="{state}"}} {int(state in q["estimated"])}'
        for q in figures
        for state in STATES
    ]
    lines += [
        "# HELP jobs_oldest_due_age_seconds Seconds since the longest-due job of the queue became due.",
        "# TYPE jobs_oldest_due_age_seconds gauge",
    ]
    lines += [
        f'jobs_oldest_due_age_seconds{{queue="{label(q["queue"])}"}} {q["oldest_due_age"] or 0:.3f}' for q in figures
    ]
    lines += ["# HELP jobs_queue_paused 1 while the queue is paused.", "# TYPE jobs_queue_paused gauge"]
    lines += [f'jobs_queue_paused{{queue="{label(q["queue"])}"}} {int(q["paused"])}' for q in figures]
    lines += limit_lines([q for q in figures if has_limit(q)])
    if dashboard.worker is not None:
        lines += [
            "# HELP jobs_worker_attempts_total Attempts this process's worker settled, by outcome.",
            "# TYPE jobs_worker_attempts_total counter",
        ]
        counts = dashboard.worker.counts
        lines += [f'jobs_worker_attempts_total{{outcome="{f.name}"}} {getattr(counts, f.name)}' for f in fields(counts)]
        lines += [
            "# HELP jobs_worker_queue_paused 1 once this process's worker has heard that its queue is paused.",
            "# TYPE jobs_worker_queue_paused gauge",
        ]
        worker = dashboard.worker
        lines += [f'jobs_worker_queue_paused{{queue="{label(q)}"}} {int(q in worker.paused)}' for q in worker.queues]
        lines += [
            "# HELP jobs_worker_wait_seconds How long the jobs this process's worker claimed had been due.",
            "# TYPE jobs_worker_wait_seconds histogram",
        ]
        for queue, waits in sorted(worker.pulse.waited().items() if worker.pulse is not None else []):
            lines += histogram("jobs_worker_wait_seconds", f'queue="{label(queue)}"', waits)
    return Answer("\n".join(lines) + "\n", content_type=CONTENT_TYPE)


def limit_lines(limited: list[dict[str, Any]]) -> list[str]:
    """The limits of the queues that have one, what is used of each, and the jobs they hold back."""
    lines = [
        "# HELP jobs_limit A queue's limit: jobs a window may start (rate), jobs in work at once (concurrency),"
        " or jobs of one key in work at once (per_key).",
        "# TYPE jobs_limit gauge",
    ]
    kinds = {"rate": "limit_used", "concurrency": "in_work"}
    lines += [
        f'jobs_limit{{queue="{label(q["queue"])}",kind="{kind}"}} {q["limit_" + kind]}'
        for q in limited
        for kind in [*kinds, "per_key"]
        if q["limit_" + kind] is not None
    ]
    lines += ["# HELP jobs_limit_used What is used of each limit now.", "# TYPE jobs_limit_used gauge"]
    lines += [
        f'jobs_limit_used{{queue="{label(q["queue"])}",kind="{kind}"}} {q[used]}'
        for q in limited
        for kind, used in kinds.items()
        if q["limit_" + kind] is not None
    ]
    lines += [
        "# HELP jobs_limit_window_seconds The window of a queue's rate.",
        "# TYPE jobs_limit_window_seconds gauge",
    ]
    lines += [
        f'jobs_limit_window_seconds{{queue="{label(q["queue"])}"}} {q["limit_per_ms"] / 1000:g}'
        for q in limited
        if q["limit_rate"] is not None
    ]
    lines += [
        "# HELP jobs_limit_held_back Due jobs that wait for room under the queue's limit.",
        "# TYPE jobs_limit_held_back gauge",
    ]
    lines += [f'jobs_limit_held_back{{queue="{label(q["queue"])}"}} {q["held_back"]}' for q in limited]
    return lines


def histogram(name: str, labels: str, waits: Waits) -> list[str]:
    """One queue's histogram lines: each bucket's cumulative count by its bound in seconds, then +Inf, sum, count."""
    lines, below = [], 0
    for bound, count in zip([*WAIT_BUCKETS, None], waits.buckets, strict=True):
        below += count
        le = "+Inf" if bound is None else f"{bound / 1000:g}"
        lines.append(f'{name}_bucket{{{labels},le="{le}"}} {below}')
    lines.append(f"{name}_sum{{{labels}}} {waits.total / 1000:.3f}")
    lines.append(f"{name}_count{{{labels}}} {below}")
    return lines


def label(value: str) -> str:
    """A label's value with the backslash, double quote and line feed escaped, as the format asks."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
