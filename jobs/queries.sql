-- The SQL of the job queue: every statement the package sends, each under its name.
-- Moments (run_at) are integer milliseconds since the epoch, chosen by the caller
-- (a worker's claim leaves them to the database's clock, see claim),
-- so a test can work a queue at any moment it likes.

-- name: prepare
-- One transaction, serialised by an advisory lock, so that many processes starting
-- at once do not race each other's CREATE TABLE IF NOT EXISTS (which can fail with a
-- duplicate key on the catalogue when two run side by side).
SELECT pg_advisory_xact_lock(7468021459);
CREATE TABLE IF NOT EXISTS jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- in the order jobs were queued
    queue text NOT NULL,             -- the queue it waits on
    name text NOT NULL,              -- which performer runs it
    args jsonb NOT NULL,             -- its arguments
    priority smallint NOT NULL DEFAULT 0,  -- among due jobs, lower runs first
    run_at bigint NOT NULL,          -- ms: when it may run next, or when its lease runs out
    attempts integer NOT NULL DEFAULT 0,   -- attempts begun, counted at the claim
    max_attempts integer NOT NULL DEFAULT 5,  -- at attempts >= max_attempts it failed for good
    claim bigint,                    -- the latest claim's token; settling needs it unchanged
    failure text NOT NULL DEFAULT '',      -- why the last attempt failed
    traceback text NOT NULL DEFAULT '',    -- where it failed
    reasons jsonb NOT NULL DEFAULT '[]',   -- every failed attempt's reason
    key text,                        -- concurrency key: one job of a key runs at a time
    unique_key text,                 -- at most one job per unique key waits or runs
    batch bigint,                    -- the batch it belongs to (flows.py)
    flow jsonb,                      -- a chain's steps after this one, or a callback's mark
    scheduled boolean NOT NULL DEFAULT false  -- waits for a later moment, out of the claim's index
);
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS scheduled boolean NOT NULL DEFAULT false;
-- The claim's index. Only rows with attempts left are in it, so jobs that failed for
-- good cost the claim nothing however many there are; within a queue it is in the
-- claim's own order, so the claim reads the first due entries and stops.
-- Jobs waiting for a later moment are out of it too, until a worker promotes them (see
-- promote), so a million jobs scheduled for tomorrow cost a claim today nothing either.
DROP INDEX IF EXISTS jobs_due;
CREATE INDEX IF NOT EXISTS jobs_ready ON jobs (queue, priority, run_at, id)
    WHERE attempts < max_attempts AND NOT scheduled;
-- Scheduled jobs by the moment they are due, for the promotion.
CREATE INDEX IF NOT EXISTS jobs_scheduled ON jobs (run_at) WHERE scheduled;
-- Jobs under a claim: few at any time, so the reaper and the status read them cheaply.
CREATE INDEX IF NOT EXISTS jobs_claimed ON jobs (run_at) WHERE claim IS NOT NULL;
-- At most one job of a concurrency key under a claim at once: the guard behind the
-- claim's own check, which two claims running side by side could both pass.
CREATE UNIQUE INDEX IF NOT EXISTS jobs_key_in_work ON jobs (key)
    WHERE key IS NOT NULL AND claim IS NOT NULL;
-- At most one job waiting or in work per unique key; one failed for good no longer
-- counts. A job in its last attempt has attempts = max_attempts, so "in work" is
-- also said with its claim.
DROP INDEX IF EXISTS jobs_unique;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_unique_key ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND (attempts < max_attempts OR claim IS NOT NULL);

-- Batches: one row each, counting down its pending jobs (flows.py).
CREATE TABLE IF NOT EXISTS job_batches (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue text NOT NULL,
    total integer NOT NULL,
    pending integer NOT NULL,
    failed integer NOT NULL DEFAULT 0,
    cancelled integer NOT NULL DEFAULT 0,
    on_success jsonb,
    on_failure jsonb,
    always jsonb,
    created_at bigint NOT NULL,
    cancelled_at bigint,
    finished_at bigint
);
CREATE INDEX IF NOT EXISTS job_batches_finished ON job_batches (finished_at)
    WHERE finished_at IS NOT NULL;
-- For cancelling a batch: its jobs, found without reading the others.
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs (batch) WHERE batch IS NOT NULL;

-- name: later
-- The insert and the notification in one statement, one round trip. NOTIFY is
-- transactional: it is delivered when the caller's transaction commits, and never if
-- it rolls back. Notifications with the same payload in one transaction are folded
-- into one, so queueing a thousand jobs at once wakes a worker once.
-- A job with a unique key that is already waiting or in work inserts nothing, so
-- nothing comes back and nobody is notified.
WITH queued AS (
    INSERT INTO jobs (queue, name, args, run_at, scheduled, priority, key, unique_key, batch, flow)
    VALUES (%(queue)s, %(name)s, %(args)s, %(run_at)s, %(scheduled)s, %(priority)s, %(key)s, %(unique)s,
        %(batch)s, %(flow)s)
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
-- The due bound sits in a scalar subquery, which the planner cannot see into: given
-- the moment itself, it read it against statistics taken while the queue was quiet
-- (every row then under a lease, due later than any moment since), expected no row
-- to be due, and sorted the whole backlog for every claim (a sequential scan and a
-- Sort under LockRows: 3 ms for 4 rows of 3,000, against 0.3 ms). Blind, it assumes a
-- share of the queue is due, and walks jobs_ready in order, stopping at LIMIT.
-- With no moment given (a worker), both moments are the database's: the due bound
-- when the statement starts, and the lease from the instant each row is updated, so
-- a claim that waited (on a lock, or on a server coming back) never commits a lease
-- that has already run out.
UPDATE jobs
SET run_at = coalesce(%(now)s::bigint, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) + %(lease)s,
    attempts = attempts + 1, claim = %(claim)s
FROM (
    SELECT id, run_at AS due_at
    FROM jobs
    WHERE queue = %(queue)s AND NOT scheduled AND attempts < max_attempts
        AND run_at <= (SELECT coalesce(%(now)s::bigint, (extract(epoch FROM statement_timestamp()) * 1000)::bigint))
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

-- name: give_back
-- Jobs a worker held when its connection dropped: it no longer runs them, and says so
-- as soon as it is connected again, so they are due at once (by the database's clock)
-- instead of after their lease. The attempt stays counted: it began. A job with
-- attempts left gives up its claim, and with it its concurrency key; one on its last
-- attempt keeps it, for the reaper to shelve with its reason as after a crash. A row
-- already settled (deleted, or failed and scheduled again) is not ours and is left alone.
UPDATE jobs
SET run_at = (extract(epoch FROM statement_timestamp()) * 1000)::bigint,
    claim = CASE WHEN attempts < max_attempts THEN NULL ELSE claim END
WHERE id = ANY(%(ids)s) AND claim = %(claim)s

-- name: taken
-- Which of the jobs the heartbeat could not extend are held by another claim: the
-- others were settled by this worker since the heartbeat read what it holds.
SELECT id FROM jobs WHERE id = ANY(%(ids)s) AND claim <> %(claim)s

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
COPY jobs (queue, name, args, run_at, scheduled, priority) FROM STDIN

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
