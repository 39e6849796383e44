"""The command line's hand on limits: `limit` and `unlimit` set and lift a queue's limit (limits.py).

An operator changes a mail provider's rate here without a deploy: the limit holds from
the next claim on every worker, which logs it, as one set from Python does.
"""

import argparse
import re
from typing import Any

import psycopg

from ..store import limits
from .commands import EXIT_OK, Commands, added, queue_name, said

RATE = re.compile(r"(\d+)/(\d+(?:\.\d+)?)")  # a rate as the command line writes it: JOBS/SECONDS


def limit_commands_added(commands: Commands) -> None:
    """Adds limit and unlimit to the command line's commands."""
    limit = added(
        commands,
        "limit",
        limit_command,
        "limit a queue's rate, concurrency or jobs per key",
        "Limit a queue, on every worker from its next claim, with no restart: --rate 14/1 lets 14 of its jobs "
        "start in any 1 s, --concurrency 4 lets 4 be in work at once, --per-key 2 lets 2 jobs of one concurrency "
        "key be in work at once. The limit given replaces the queue's limit: a part not given is lifted. Exits 0.",
    )
    limit.add_argument("queue", metavar="QUEUE", type=queue_name)
    limit.add_argument("--rate", metavar="JOBS/SECONDS", type=rate, help="jobs started in any window of SECONDS")
    limit.add_argument("--concurrency", metavar="JOBS", type=int, help="jobs in work at once")
    limit.add_argument("--per-key", metavar="JOBS", type=int, help="jobs of one concurrency key in work at once")
    added(
        commands,
        "unlimit",
        unlimit_command,
        "lift a queue's limit",
        "Lift a queue's limit, on every worker from its next claim. Exits 0, or 1 when it had none.",
    ).add_argument("queue", metavar="QUEUE", type=queue_name)


def rate(text: str) -> tuple[int, float]:
    """A rate JOBS/SECONDS, for argparse: 14/1, 100/60, 1/0.5."""
    matched = RATE.fullmatch(text)
    if not matched:
        raise argparse.ArgumentTypeError(f"a rate is JOBS/SECONDS, such as 14/1, not {text!r}")
    return int(matched[1]), float(matched[2])


def limit_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Sets a queue's limit, and says it; a limit that makes no sense is refused as a wrong command line."""
    if args.rate is None and args.concurrency is None and args.per_key is None:
        args.usage("give --rate, --concurrency or --per-key (to lift a queue's limit: unlimit)")
    try:
        limit = limits.limited(db, args.queue, rate=args.rate, concurrency=args.concurrency, per_key=args.per_key)
    except ValueError as error:
        args.usage(str(error))  # exits EXIT_USAGE
    print(f"queue {args.queue} limited to {limit.said()}, from the next claim of every worker")
    return EXIT_OK


def unlimit_command(args: argparse.Namespace, db: psycopg.Connection[Any]) -> int:
    """Lifts a queue's limit, and says whether it had one."""
    return said(
        limits.unlimited(db, args.queue),
        f"queue {args.queue} is no longer limited, from the next claim of every worker",
        f"queue {args.queue} had no limit",
    )
