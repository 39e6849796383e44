"""A page of the dashboard's lists reads its own page of the index, however many jobs share one moment.

A million jobs queued by one later_many with one `at` share their run_at: a page of
the scheduled list ordered by (run_at, id) must not read and sort all of them.
"""

import pytest
from psycopg import sql

import jobs
from jobs.web import listing
from tests.jobs.test_plan import executed_nodes

SAME_MOMENT = 3_000  # scheduled jobs queued for one moment
LIMIT = 50  # jobs a page shows


@pytest.mark.parametrize("queue", ["mail", None], ids=["one-queue", "every-queue"])
def test_a_page_of_the_scheduled_list_reads_a_page_of_jobs_that_share_their_moment(db, queue):
    jobs.later_many(db, "mail", "note", [{}] * SAME_MOMENT, at=jobs.now_ms() + 3_600_000)
    db.execute("ANALYZE jobs")
    filters = listing.Filters(state="scheduled", queue=queue)
    statement = sql.SQL(listing.statements["page"]).format(
        walk=listing.walk_of(filters, LIMIT), limit=sql.Literal(LIMIT), matches=sql.SQL(listing.statements["matches"])
    )
    [[explained]] = db.execute(
        b"EXPLAIN (ANALYZE, FORMAT JSON) " + statement.as_bytes(db), listing.parameters(filters, None, jobs.now_ms())
    ).fetchone()
    read = [
        (node["Node Type"], node.get("Index Name"), node["Actual Rows"])
        for node in executed_nodes(explained["Plan"])
        if node.get("Relation Name") == "jobs"
    ]
    assert read and all(rows <= LIMIT for _, _, rows in read), read
