"""The command line: `python -m jobs work QUEUE[,QUEUE...] --performers module:attribute`.

Runs a worker as a process of its own, on the database DATABASE_URL names, making
the jobs table first when it is missing. SIGTERM or SIGINT lets the jobs in hand
finish and settle, then the process exits 0.
"""

import argparse
import importlib
import logging
import os
import signal
import sys

import psycopg

from . import store
from .worker import POLL_INTERVAL, Worker

APPLICATION_NAME = "jobs worker"  # how a worker's connections show in pg_stat_activity


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("jobs: set DATABASE_URL to the database to work on", file=sys.stderr)
        return 2
    return args.command(args, url)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m jobs", description="Work and inspect the jobs table.")
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    work = commands.add_parser("work", help="run a worker until SIGTERM", description="Run a worker until SIGTERM or SIGINT.")
    work.add_argument("queues", metavar="QUEUE[,QUEUE...]", type=lambda text: [q for q in text.split(",") if q])
    work.add_argument("--performers", required=True, metavar="MODULE:ATTRIBUTE", help="the dict mapping job names to performers")
    work.add_argument("--lease", type=float, default=store.LEASE, metavar="SECONDS", help=f"how long a claim holds a job (default {store.LEASE:g})")
    work.add_argument("--threads", type=int, default=1, metavar="N", help="jobs run at once (default 1); uses N + 1 connections")
    work.add_argument("--poll", type=float, default=POLL_INTERVAL, metavar="SECONDS", help=f"idle look-up interval (default {POLL_INTERVAL:g})")
    work.add_argument("--no-listen", dest="listen", action="store_false", help="poll only (for PgBouncer in transaction mode)")
    work.set_defaults(command=work_command)
    return top


def work_command(args, url: str) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(process)d %(message)s")
    performers = imported(args.performers)
    with psycopg.connect(url, autocommit=True) as db:
        store.prepared(db)
    running = Worker(lambda: psycopg.connect(url, application_name=APPLICATION_NAME), args.queues, performers, threads=args.threads,
                     lease=args.lease, poll=args.poll, listen=args.listen)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: running.stop())
    running.start()
    logging.getLogger("jobs").info("working %s with %s thread(s)", ",".join(args.queues), args.threads)
    while not running.join(timeout=0.5):
        pass  # join in short steps, so the signal handlers run promptly
    return 0


def imported(spec: str):
    """The object `module:attribute` names."""
    module, _, attribute = spec.partition(":")
    if not module or not attribute:
        raise SystemExit(f"jobs: --performers takes module:attribute, got {spec!r}")
    return getattr(importlib.import_module(module), attribute)


if __name__ == "__main__":
    sys.exit(main())
