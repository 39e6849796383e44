-- The SQL of the job queue: every statement the package sends, each under its name,
-- but those that make and upgrade its tables (schema.sql).
-- Moments (run_at) are integer milliseconds since the epoch, chosen by the caller,
-- so a test can work a queue at any moment it likes.

-- name: later
-- The insert and the notification in one statement, one round trip. NOTIFY is
-- transactional: it is delivered when the caller's transaction commits, and never if
-- it rolls back. Notifications with the same payload in one transaction are folded
-- into one, so queueing a thousand jobs at once wakes a worker once.
-- A job with a unique key that is already waiting or in work inserts nothing, so
-- nothing comes back and nobody is notified.
WITH queued AS (
    INSERT INTO jobs (queue, name, args, run_at, scheduled, priority, max_attempts, key, unique_key, batch, flow)
    VALUES (%(queue)s, %(name)s, %(args)s, %(run_at)s, %(scheduled)s, %(priority)s, %(max_attempts)s, %(key)s,
        %(unique)s, %(batch)s, %(flow)s)
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND (attempts < max_attempts OR claim IS NOT NULL)
    DO NOTHING
    RETURNING id
)
SELECT id, pg_notify('jobs', %(queue)s) FROM queued

-- name: claim
-- The claim, in one statement that commits at once: the first due jobs of the queue
-- in the order priority, run_at, id, skipping rows other workers hold locked at this
-- instant (FOR UPDATE SKIP LOCKED, so no worker waits on another and none takes a row
-- twice). The same statement counts the attempt, writes the claim's token and moves
-- run_at one lease on: that is the lease. Nothing stays locked while the jobs run, so
-- a worker that dies leaves its rows to be claimed again when the lease runs out.
-- The old run_at comes back as due_at, for the worker to keep the claim's order.
-- A job with a concurrency key waits while any job of its key is under a claim. The
-- test reads the claimed keys once per statement (a correlated test per row cost a
-- third of the claim's time); a job whose own lease ran out still holds its key
-- until the reaper frees it (expire, below).
-- LIMIT is written into the statement, not passed as a parameter: a prepared
-- statement's generic plan that does not know it expects thousands of rows and joins
-- them by reading the whole table (90 ms beside a million jobs, against 0.5 ms).
UPDATE jobs
SET run_at = %(now)s + %(lease)s, attempts = attempts + 1, claim = %(claim)s
FROM (
    SELECT id, run_at AS due_at
    FROM jobs
    WHERE queue = %(queue)s AND run_at <= %(now)s AND attempts < max_attempts AND NOT scheduled
        AND (key IS NULL OR key NOT IN (SELECT key FROM jobs WHERE claim IS NOT NULL AND key IS NOT NULL))
    ORDER BY priority, run_at, id
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
) AS due
WHERE jobs.id = due.id
RETURNING jobs.id, jobs.queue, jobs.name, jobs.args, jobs.priority, due.due_at,
    jobs.attempts, jobs.max_attempts, jobs.key, jobs.batch, jobs.flow

-- name: finish
-- A job that succeeded is deleted, on the transaction that holds its performer's
-- writes, but only while the claim is still ours: a worker that lost its lease must
-- not delete a row another worker now holds. The ids that come back tell which.
DELETE FROM jobs WHERE id = ANY(%(ids)s) AND claim = %(claim)s RETURNING id

-- name: fail
-- A failed attempt keeps its reason and waits for its next run; max_attempts is
-- where the performer's policy ends the retries (set to attempts, it fails for good).
UPDATE jobs
SET failure = %(reason)s, traceback = %(traceback)s, run_at = %(run_at)s, scheduled = %(scheduled)s,
    max_attempts = %(max_attempts)s, claim = NULL,
    reasons = reasons || jsonb_build_array(%(reason)s::text)
WHERE id = %(id)s AND claim = %(claim)s

-- name: release
-- Claimed jobs a stopping worker never started go back as they were.
UPDATE jobs
SET run_at = %(now)s, attempts = attempts - 1, claim = NULL
WHERE id = ANY(%(ids)s) AND claim = %(claim)s

-- name: extend
-- The heartbeat: the leases of the jobs a worker holds run one lease from now again.
UPDATE jobs SET run_at = %(now)s + %(lease)s
WHERE id = ANY(%(ids)s) AND claim = %(claim)s
RETURNING id

-- name: reap
-- Jobs whose worker died on their last attempt: the lease ran out, and no attempt is
-- left to claim them with. They become failures for good, with a reason to read, and
-- give up their claim (and so their concurrency key); their chains and batches hear
-- of the failure as they would of any other.
UPDATE jobs
SET claim = NULL, failure = 'its worker stopped during the last attempt',
    reasons = reasons || '["its worker stopped during the last attempt"]'
WHERE claim IS NOT NULL AND run_at <= %(now)s AND attempts >= max_attempts
RETURNING id, name, queue, batch, flow

-- name: expire
-- Keyed jobs whose lease ran out give their key back, so that they (or another job
-- of their key) can be claimed again; a worker that still settles one finds its
-- claim gone and is refused, as it would be after any other claim.
UPDATE jobs SET claim = NULL
WHERE claim IS NOT NULL AND key IS NOT NULL AND run_at <= %(now)s AND attempts < max_attempts

-- name: promote
-- Jobs scheduled for a moment that has come join the claim's index, and the workers of
-- their queues are woken. Every worker's listener runs it every POLL_INTERVAL, so a
-- scheduled job starts within about that much of its moment.
WITH promoted AS (
    UPDATE jobs SET scheduled = false
    WHERE scheduled AND run_at <= %(now)s
    RETURNING queue
)
SELECT queue, pg_notify('jobs', queue) FROM (SELECT DISTINCT queue FROM promoted) AS woken

-- name: listed
SELECT id, queue, name, args, priority, run_at, scheduled, attempts, max_attempts, failure,
    traceback, reasons, key, unique_key, batch, flow
FROM jobs
WHERE %(queue)s::text IS NULL OR queue = %(queue)s
ORDER BY id

-- name: outstanding
-- Jobs due now or held under a live lease, for a worker waiting until its queues are empty.
SELECT count(*) FROM jobs
WHERE queue = ANY(%(queues)s)
    AND ((attempts < max_attempts AND run_at <= %(now)s) OR (claim IS NOT NULL AND run_at > %(now)s))

-- Chains and batches (flows.py) ---------------------------------------------------

-- name: new_batch
-- The batch is written before its jobs, in the same transaction as they are.
INSERT INTO job_batches (queue, total, pending, on_success, on_failure, always, created_at)
VALUES (%(queue)s, %(total)s, %(total)s, %(on_success)s, %(on_failure)s, %(always)s, %(now)s)
RETURNING id

-- name: batch_settled
-- Counts settled jobs of one batch, and decides in this one statement whether they
-- were its last: the row lock makes two settlers of the last two jobs take turns, the
-- second sees what the first left, and only the statement that brings pending to
-- nothing sets finished_at. "AND finished_at IS NULL" makes a late or repeated
-- settlement count nothing, so pending never goes below nothing and the callbacks
-- are queued once. first_failure is true for the statement that counted the first
-- failure, for the same reason.
UPDATE job_batches
SET pending = greatest(pending - %(settled)s, 0),
    failed = failed + %(failed)s,
    finished_at = CASE WHEN pending - %(settled)s <= 0 THEN %(now)s END
WHERE id = %(id)s AND finished_at IS NULL
RETURNING finished_at IS NOT NULL AS last, failed - %(failed)s = 0 AND %(failed)s > 0 AS first_failure,
    queue, on_success, on_failure, always, failed, cancelled_at IS NOT NULL AS cancelled

-- name: cancel_batch
-- Jobs of the batch that no worker holds are skipped: deleted and counted as
-- cancelled (they are then settled like finished jobs, by batch_settled). Those under
-- a claim run on and settle as usual. The callbacks of the batch are not its jobs.
WITH skipped AS (
    DELETE FROM jobs
    WHERE batch = %(id)s AND claim IS NULL AND attempts < max_attempts
        AND (flow IS NULL OR NOT flow ? 'callback')
    RETURNING id
)
UPDATE job_batches
SET cancelled_at = coalesce(cancelled_at, %(now)s),
    cancelled = cancelled + (SELECT count(*) FROM skipped)
WHERE id = %(id)s AND finished_at IS NULL
RETURNING (SELECT count(*) FROM skipped)

-- name: batch_status
SELECT id, total, pending, failed, cancelled, finished_at IS NOT NULL AS finished,
    cancelled_at IS NOT NULL AS cancelling
FROM job_batches WHERE id = %(id)s

-- name: prune_batches
DELETE FROM job_batches WHERE finished_at IS NOT NULL AND finished_at < %(before)s

-- name: later_many
-- Many jobs at once: COPY is the fastest way into a table, several times faster
-- than INSERTs, and one notification wakes the workers for all of them.
COPY jobs (queue, name, args, run_at, scheduled, priority, max_attempts) FROM STDIN

-- name: notify
SELECT pg_notify('jobs', %(queue)s)

-- The failed shelf and status (shelf.py) ------------------------------------------
-- A job is on the shelf when it has no attempts left and no claim holds it: it
-- failed for good, or its worker died on its last attempt and a heartbeat reaped it.
-- Its run_at is then the moment it failed (or the end of its lost lease).

-- name: shelf
SELECT id, queue, name, args, attempts, run_at AS failed_at, failure, traceback, reasons
FROM jobs
WHERE attempts >= max_attempts AND claim IS NULL
    AND (%(queue)s::text IS NULL OR queue = %(queue)s)
ORDER BY id

-- name: retry
-- Jobs from the shelf go back in the queue, due at once, with their attempts counted
-- from 0 again; their reasons stay. A job with attempts left counts again in the
-- unique index (jobs_unique_key), so a job whose unique key another job holds now stays
-- on the shelf, and of shelved jobs sharing a key only the oldest comes back: without
-- these two tests the UPDATE would fail on the index. FOR UPDATE makes a job that
-- another session retries or discards at the same moment be read again and left alone.
-- A job of a batch leaves its batch: the batch counted its failure already, and must
-- not count the job a second time when it settles now. A batch's callback keeps it.
-- Like `later`, it wakes the workers of each queue when the caller's transaction commits.
WITH shelved AS (
    SELECT id, unique_key
    FROM jobs AS j
    WHERE attempts >= max_attempts AND claim IS NULL
        AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))
        AND NOT EXISTS (
            SELECT 1 FROM jobs AS holder
            WHERE holder.unique_key = j.unique_key
                AND (holder.attempts < holder.max_attempts OR holder.claim IS NOT NULL))
    FOR UPDATE
), chosen AS (
    SELECT id FROM shelved
    WHERE unique_key IS NULL
        OR id = (SELECT min(id) FROM shelved AS twin WHERE twin.unique_key = shelved.unique_key)
), back AS (
    UPDATE jobs
    SET attempts = 0, max_attempts = %(attempts)s, run_at = %(now)s, scheduled = false,
        batch = CASE WHEN flow ? 'callback' THEN batch END
    FROM chosen
    WHERE jobs.id = chosen.id
    RETURNING jobs.id, jobs.queue
)
SELECT id, pg_notify('jobs', queue) FROM back

-- name: discard
-- Deletes jobs from the shelf. A job retried by another session at the same moment is
-- read again under its row lock, is no longer on the shelf, and is left alone.
DELETE FROM jobs
WHERE attempts >= max_attempts AND claim IS NULL
    AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))

-- name: status
-- Each queue's jobs counted by state at %(now)s, in one pass over the table: every row
-- counts in exactly one column. Counting every row is the work itself, so one scan with
-- FILTERed counts is the cheapest plan; each FILTER reads as the partial index whose
-- rows it counts (jobs_due: attempts < max_attempts; jobs_claimed: claim IS NOT NULL).
--   due        may run now: due, or its lease ran out with attempts left to claim it by
--   scheduled  waits for a later moment (a retry, or a job queued with `at`)
--   in_work    held by a claim whose lease runs, or that lost its worker on the last
--              attempt (until a heartbeat reaps it onto the shelf)
--   failed     on the shelf
SELECT queue,
    count(*) FILTER (WHERE attempts < max_attempts AND run_at <= %(now)s) AS due,
    count(*) FILTER (WHERE attempts < max_attempts AND run_at > %(now)s AND claim IS NULL) AS scheduled,
    count(*) FILTER (WHERE claim IS NOT NULL
        AND (run_at > %(now)s OR attempts >= max_attempts)) AS in_work,
    count(*) FILTER (WHERE attempts >= max_attempts AND claim IS NULL) AS failed,
    (%(now)s - min(run_at) FILTER (WHERE attempts < max_attempts AND run_at <= %(now)s))::float8 / 1000
        AS oldest_due_age
FROM jobs
GROUP BY queue
ORDER BY queue
