"""Where a claim writes the new version of a job's row, at each fillfactor: on its own page, or another.

`python -m tests.benchmarks.fillfactor` (not part of the tests) queues JOBS fresh jobs in
the jobs table at each fillfactor of FILLFACTORS, claims them all, BATCH a claim, and
prints the share of claimed rows whose new version went to another page, and the table's
size. It is the measurement behind the fillfactor that step 4 of jobs/store/schema.sql sets.
"""

import argparse
import os
import tempfile
from pathlib import Path

from psycopg import sql

import jobs
from jobs.store import claims

from . import database

FILLFACTORS = (100, 90, 80, 70, 50)  # the settings compared, in percent of each page filled at insert
JOBS = 5000  # jobs queued and claimed at each setting
BATCH = 100  # jobs a claim takes, as a busy worker's claims do
PAGE = 8192  # bytes of a PostgreSQL page


def moved(db, fillfactor: int) -> tuple[float, int]:
    """The share of JOBS claimed rows written to another page at `fillfactor`, and the table's pages after."""
    database.emptied(db, "jobs")
    db.execute(sql.SQL("ALTER TABLE jobs SET (fillfactor = {})").format(sql.Literal(fillfactor)))
    jobs.later_many(db, database.QUEUE, database.NAME, [{"n": n} for n in range(JOBS)], at=1)
    pages = "SELECT id, (ctid::text::point)[0] FROM jobs"  # the page each row's current version is on
    before = dict(db.execute(pages).fetchall())
    while claims.claimed(db, database.QUEUE, jobs.now_ms(), limit=BATCH):
        pass
    after = dict(db.execute(pages).fetchall())
    size = db.execute("SELECT pg_relation_size('jobs')").fetchone()[0] // PAGE
    return sum(before[id] != after[id] for id in before) / len(before), size


def main(argv=None) -> int:
    options = argparse.ArgumentParser(prog="python -m tests.benchmarks.fillfactor", description=__doc__.splitlines()[0])
    options.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL"),
        metavar="URL",
        help="the database to measure on (default: DATABASE_URL, else a throw-away embedded PostgreSQL)",
    )
    url = options.parse_args(argv).database_url
    with tempfile.TemporaryDirectory(prefix="jobs-fillfactor-") as folder:
        if not url:
            from guestbook import embedded  # only a run without a database needs it

            url = embedded.server(Path(folder) / "pgdata", throwaway=True).get_uri()
        database.made(url)
        try:
            with database.connected(url) as db:
                print(f"{JOBS:,} fresh jobs claimed {BATCH} at a time; {database.described(url)}")
                for fillfactor in FILLFACTORS:
                    share, size = moved(db, fillfactor)
                    print(
                        f"fillfactor {fillfactor:3}: {share:4.0%} of the claimed rows moved to another page; "
                        f"{size} pages"
                    )
        finally:
            database.dropped(url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
