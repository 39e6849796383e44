"""Reads the named statements of queries.sql, so the SQL of the queue stays in one file.

Each statement there starts with a line `-- name: NAME`; the comment lines under it
say why the statement is shaped as it is and stay in the file, not in the string.
"""

from pathlib import Path

QUERIES = Path(__file__).with_name("queries.sql")
SCHEDULE_QUERIES = Path(__file__).with_name("schedules.sql")  # the statements of schedules.py


def load(path: Path = QUERIES) -> dict[str, str]:
    """Maps each statement's name to its text, comments left out."""
    statements: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- name:"):
            lines = statements.setdefault(line.removeprefix("-- name:").strip(), [])
        elif not line.lstrip().startswith("--") and line.strip():
            lines.append(line)
    return {name: "\n".join(text) for name, text in statements.items()}


queries = load()
schedule_queries = load(SCHEDULE_QUERIES)
