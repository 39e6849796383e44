-- The plain-SQL limits jobs is held against: the statements a queue cannot do without,
-- sent one at a time with nothing around them. They work on plain_jobs, a table made
-- LIKE jobs (same columns, same indexes), so the baselines and jobs never meet.

-- name: claim
-- jobs' own claim (jobs/store/queries.sql) without its concurrency-key test: the first due
-- rows under SKIP LOCKED, their attempt counted and their lease written, in one
-- statement that commits at once. Like jobs', it names the partial index's condition
-- (NOT scheduled) and has its LIMIT written in, so a prepared plan stays an index lookup.
UPDATE plain_jobs
SET run_at = %(now)s + %(lease)s, attempts = attempts + 1, claim = %(claim)s
FROM (
    SELECT id, run_at AS due_at
    FROM plain_jobs
    WHERE queue = %(queue)s AND run_at <= %(now)s AND attempts < max_attempts AND NOT scheduled
    ORDER BY priority, run_at, id
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
) AS due
WHERE plain_jobs.id = due.id
RETURNING plain_jobs.id, plain_jobs.queue, plain_jobs.name, plain_jobs.args,
    plain_jobs.priority, due.due_at, plain_jobs.attempts, plain_jobs.max_attempts

-- name: delete
-- Settling the claimed rows: gone, as long as the claim is still the caller's.
DELETE FROM plain_jobs WHERE id = ANY(%(ids)s) AND claim = %(claim)s

-- name: delete_one
-- Settling one claimed row, the id a plain parameter: what a transaction per job deletes.
DELETE FROM plain_jobs WHERE id = %(id)s AND claim = %(claim)s

-- name: insert
INSERT INTO plain_jobs (queue, name, args, run_at) VALUES (%(queue)s, %(name)s, %(args)s, %(run_at)s)

-- name: insert_notify
-- The insert and a notification in one statement, as jobs' `later` sends them, on a
-- channel of the baseline's own.
WITH queued AS (
    INSERT INTO plain_jobs (queue, name, args, run_at) VALUES (%(queue)s, %(name)s, %(args)s, %(run_at)s)
    RETURNING id
)
SELECT id, pg_notify('plain_jobs', %(queue)s) FROM queued

-- name: listen
LISTEN plain_jobs

-- name: copy
COPY plain_jobs (queue, name, args, run_at) FROM STDIN

-- name: written
-- The row a writing job writes (writing.py), in a table of the benchmark's own.
INSERT INTO written (n) VALUES (%(n)s)
