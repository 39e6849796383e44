-- The SQL of the dashboard (jobs.web) beyond what shelf.py and control.py send: a job
-- by id in any state, and the batches a page at a time, each read by primary key; and
-- the queues the live workers serve, from the small table of workers.

-- name: state
-- A job's state at %(now)s, named as status counts it (shelf.py): written into the
-- statements below where they say {state} (pages.py), so that each page names it alike.
CASE
    WHEN attempts >= max_attempts AND claim IS NULL THEN 'failed'
    WHEN claim IS NOT NULL AND (run_at > %(now)s OR attempts >= max_attempts) THEN 'in work'
    WHEN run_at <= %(now)s THEN 'due'
    ELSE 'scheduled'
END AS state

-- name: job
-- One job by id, with its state at %(now)s.
SELECT id, queue, name, args, secret, priority, run_at, attempts, max_attempts, failure, traceback, reasons,
    key, unique_key, batch, cancelled_at, worker, retries, queued_at, ran,
    {state}
FROM jobs
WHERE id = %(id)s

-- name: batches
-- A page of batches, newest first, below the id %(before)s (the largest bigint for the
-- first page, so the scan starts on the primary key whatever the plan; see shelf_page).
SELECT id, queue, total, pending, failed, cancelled, created_at, finished_at, cancelled_at
FROM job_batches
WHERE id < coalesce(%(before)s, 9223372036854775807)
ORDER BY id DESC
LIMIT {limit}

-- name: still_shelved
-- Which of the ids are on the shelf, for a retry to say which stayed there.
SELECT id FROM jobs WHERE id = ANY(%(ids)s) AND attempts >= max_attempts AND claim IS NULL ORDER BY id

-- name: batch
SELECT id, queue, total, pending, failed, cancelled, created_at, finished_at, cancelled_at
FROM job_batches
WHERE id = %(id)s

-- name: batch_jobs
-- A page of a batch's jobs still in the table (one that succeeded is gone), by id after
-- %(after)s, each with its {state} at %(now)s. Read from
-- jobs_batch (batch): the batch's own entries and no other row, sorted by id, so the
-- page costs what the batch holds, whatever else lies in the table.
SELECT id, name, priority, run_at, attempts, max_attempts, worker, failure,
    {state}
FROM jobs
WHERE batch = %(batch)s AND id > %(after)s
ORDER BY id
LIMIT {limit}

-- name: serving
-- How many live workers serve each queue, and how many threads they bring: a worker
-- is live while it works (ended_at IS NULL) and has beaten within %(silent)s of its
-- lease, as control.state_of says "working". job_workers holds a row per worker
-- of the last hour, so the table is read whole.
SELECT queue, count(*) AS workers, sum(threads)::integer AS threads
FROM job_workers CROSS JOIN LATERAL unnest(queues) AS queue
WHERE ended_at IS NULL AND {now} - beat_at <= lease * %(silent)s
GROUP BY queue

-- name: reasons
-- Every reason and the last traceback of the jobs a page of the failed view lists, by
-- primary key: the list's walk (lists.sql) reads the short columns alone, so a filter
-- that walks thousands of jobs carries no traceback it will not show.
SELECT id, reasons, traceback FROM jobs WHERE id = ANY(%(ids)s)
