"""Reads the named statements of a .sql file, so the SQL of each layer stays in files of its own.

Each layer loads its own files (store/ its queries.sql, read once for all its modules by
`read_once`; web/ its lists.sql): each statement there starts with a line `-- name: NAME`;
the comment lines under it say why it is shaped as it is and stay in the file, not in the string.
Two words stand for the moment a statement works at, so that every worker on every
machine reads one clock, the database's: `{now}` is the caller's %(now)s when it fixes
one (tests, a caller's own loop) and else the statement's start, and `{clock}` the
same but read when the row is written (for a lease that must run from then).
`one` reads the row of a statement that always answers one.
"""

import functools
from pathlib import Path
from typing import TypeVar

import psycopg

R = TypeVar("R")  # a row, as the cursor's row factory makes it

# The words, and the SQL each stands for: integer ms since the epoch, rounded down as
# now_ms() rounds (a cast would round to the nearest, half a millisecond into a future
# that a caller's own clock has not reached).
MOMENTS = {
    "{now}": "COALESCE(%(now)s::bigint, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)",
    "{clock}": "COALESCE(%(now)s::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
}


def load(path: Path) -> dict[str, str]:
    """Maps each statement's name to its text, comments left out."""
    statements: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- name:"):
            lines = statements.setdefault(line.removeprefix("-- name:").strip(), [])
        elif not line.lstrip().startswith("--") and line.strip():
            lines.append(line)
    return {name: moments_written("\n".join(text)) for name, text in statements.items()}


@functools.cache
def read_once(path: Path) -> dict[str, str]:
    """`load(path)`, read once however many modules ask for it: the modules of store/ share its queries.sql."""
    return load(path)


def moments_written(text: str) -> str:
    """The statement with {now} and {clock} written out (see MOMENTS)."""
    for word, moment in MOMENTS.items():
        text = text.replace(word, moment)
    return text


def one(cursor: psycopg.Cursor[R]) -> R:
    """The row of a statement that always answers one (a count, an upsert's RETURNING); a LookupError if none came."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError(f"a statement that always answers a row answered none ({cursor.statusmessage})")
    return row
