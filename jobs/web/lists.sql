-- The state lists of the dashboard (listing.py): the jobs due, scheduled, in work or on
-- the shelf, a page at a time by a keyset in the order of the state's own partial index
-- (schema.sql, steps 3 and 6), so a page reads only its own entries however many
-- jobs of other states lie beside them. Each statement is a walk: the next {walk}
-- entries of the state after the keyset %(after_*)s, in the index's order; page (below)
-- keeps those that pass the filters. With no filter the walk is a page long.

-- name: page
-- The page a walk gives: the first {limit} walked jobs that pass the filters by name,
-- by worker and by an argument's value (matches, below), then the last walked row (found = false), whose
-- key the next page starts after when the walk ran out before the page was full, with
-- how many jobs were walked. The walk is MATERIALIZED, read once: the filters read its
-- rows, not the table. An argument is matched on its text (jsonb_each_text, the
-- top-level arguments only), and never an argument the job names secret.
WITH walked AS MATERIALIZED (
    {walk}
), found AS (
    SELECT * FROM walked
    WHERE {matches}
    ORDER BY n
    LIMIT {limit}
)
SELECT *, true AS found, 0::bigint AS walked FROM found
UNION ALL
(SELECT *, false, (SELECT count(*) FROM walked) FROM walked ORDER BY n DESC LIMIT 1)
ORDER BY found DESC, n

-- name: counted
-- How many of the walked jobs pass page's filters (the same test, {matches}), and how
-- many were walked: a bulk action's preview counts without carrying rows to Python.
WITH walked AS MATERIALIZED (
    {walk}
)
SELECT count(*) FILTER (WHERE {matches}) AS matched, count(*) AS walked FROM walked

-- name: matches
-- The filters of a list, as page and counted apply them to a walked job.
(%(name)s::text IS NULL OR name = %(name)s)
    AND (%(worker)s::bigint IS NULL OR worker = %(worker)s)
    AND (%(value)s::text IS NULL OR CASE WHEN jsonb_typeof(args) = 'object' THEN EXISTS (
        SELECT FROM jsonb_each_text(args) AS arg
        WHERE arg.value = %(value)s AND arg.key <> ALL (coalesce(secret, ARRAY[]::text[]))) END)

-- name: due
-- The due jobs of one queue in the claim's order (priority, run_at, id), read from
-- jobs_ready with a row comparison on its own columns after the queue, so the walk
-- starts at the keyset and stops at {walk}. A job under a lease that runs (run_at in
-- the future, HELD for a worker's) sits in the same index and is passed over: those
-- are the jobs in work, a few per worker thread.
SELECT *, row_number() OVER (ORDER BY priority, run_at, id) AS n FROM (
    SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
    FROM jobs
    WHERE queue = %(queue)s AND attempts < max_attempts AND NOT scheduled AND run_at <= %(now)s
        AND (priority, run_at, id) > (%(after_priority)s::integer, %(after_run_at)s::bigint, %(after_id)s::bigint)
    ORDER BY priority, run_at, id
    LIMIT {walk}
) AS due

-- name: due_everywhere
-- The same walk on every queue: jobs_ready leads with the queue, so the queues are
-- named first ({queues}: the queues block below, on jobs_ready's entries), the walk
-- runs on each (LATERAL), and the first {walk} of their merge is the page's walk: a
-- cost of {walk} entries per queue, not of the whole backlog.
{queues}
SELECT *, row_number() OVER (ORDER BY priority, run_at, id) AS n FROM (
    SELECT due.* FROM queues CROSS JOIN LATERAL (
        SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
        FROM jobs
        WHERE queue = queues.queue AND attempts < max_attempts AND NOT scheduled AND run_at <= %(now)s
            AND (priority, run_at, id) > (%(after_priority)s::integer, %(after_run_at)s::bigint, %(after_id)s::bigint)
        ORDER BY priority, run_at, id
        LIMIT {walk}
    ) AS due
    WHERE queues.queue IS NOT NULL
    ORDER BY priority, run_at, id
    LIMIT {walk}
) AS due

-- name: scheduled
-- The jobs waiting for a later moment (scheduled: retries, jobs queued with `at`), the
-- soonest first, from jobs_scheduled_by_queue (queue, run_at, id), whose last column
-- keeps a page of jobs due at one moment from sorting all of them (schema.sql, step 11).
-- One whose moment has come stays here until a worker's listener promotes it, within a
-- POLL_INTERVAL.
SELECT *, row_number() OVER (ORDER BY run_at, id) AS n FROM (
    SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
    FROM jobs
    WHERE queue = %(queue)s AND scheduled AND (run_at, id) > (%(after_run_at)s::bigint, %(after_id)s::bigint)
    ORDER BY run_at, id
    LIMIT {walk}
) AS scheduled

-- name: scheduled_everywhere
-- The same on every queue, merged as due_everywhere merges them: jobs_scheduled (run_at),
-- the promotion's index, has no id to page by.
{queues}
SELECT *, row_number() OVER (ORDER BY run_at, id) AS n FROM (
    SELECT scheduled.* FROM queues CROSS JOIN LATERAL (
        SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
        FROM jobs
        WHERE queue = queues.queue AND scheduled
            AND (run_at, id) > (%(after_run_at)s::bigint, %(after_id)s::bigint)
        ORDER BY run_at, id
        LIMIT {walk}
    ) AS scheduled
    WHERE queues.queue IS NOT NULL
    ORDER BY run_at, id
    LIMIT {walk}
) AS scheduled

-- name: queues
-- The queues that hold an entry of a state's index, whose condition is {entry} (ready
-- or scheduled, below), named by a loose index scan: one probe of the index per
-- queue, not one per entry, as status names them.
WITH RECURSIVE queues(queue) AS (
    (SELECT queue FROM jobs WHERE {entry} ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM jobs WHERE {entry} AND queue > queues.queue ORDER BY queue LIMIT 1)
    FROM queues WHERE queues.queue IS NOT NULL
)

-- name: ready
-- An entry of jobs_ready: a job with attempts left, not waiting for a later moment.
attempts < max_attempts AND NOT scheduled

-- name: scheduled_entry
-- An entry of jobs_scheduled_by_queue: a job waiting for a later moment.
scheduled

-- name: in_work
-- The jobs under a live claim, or that lost their worker on their last attempt (as
-- status counts them), by id. The claimed rows are few (the workers' threads times
-- BATCH_MAX) and jobs_claimed holds them alone; they are read MATERIALIZED, so the
-- planner never walks the primary key in id order looking for them among a million.
WITH claimed AS MATERIALIZED (
    SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
    FROM jobs
    WHERE claim IS NOT NULL AND (run_at > %(now)s OR attempts >= max_attempts)
)
SELECT *, row_number() OVER (ORDER BY id) AS n FROM (
    SELECT * FROM claimed
    WHERE (%(queue)s::text IS NULL OR queue = %(queue)s) AND id > %(after_id)s::bigint
    ORDER BY id
    LIMIT {walk}
) AS in_work

-- name: failed
-- One queue's shelf, newest first, from jobs_shelf_queue (queue, id), as shelf_page_of_queue.
SELECT *, row_number() OVER (ORDER BY id DESC) AS n FROM (
    SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
    FROM jobs
    WHERE queue = %(queue)s AND attempts >= max_attempts AND claim IS NULL AND id < %(after_id)s::bigint
    ORDER BY id DESC
    LIMIT {walk}
) AS failed

-- name: failed_everywhere
-- The whole shelf, newest first, from jobs_shelf (id), as shelf_page.
SELECT *, row_number() OVER (ORDER BY id DESC) AS n FROM (
    SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, worker, failure
    FROM jobs
    WHERE attempts >= max_attempts AND claim IS NULL AND id < %(after_id)s::bigint
    ORDER BY id DESC
    LIMIT {walk}
) AS failed
