-- The SQL of the job queue: every statement the package sends, each under its name,
-- but those that make and upgrade its tables (schema.sql).
-- Moments (run_at) are integer milliseconds since the epoch on the database's clock:
-- {now} and {clock} stand for it (sql.py writes them out), so workers on machines
-- whose clocks disagree still agree on every lease. A caller may fix %(now)s instead,
-- so a test can work a queue at any moment it likes.

-- name: later
-- The insert and the notification in one statement, one round trip. NOTIFY is
-- transactional: it is delivered when the caller's transaction commits, and never if it
-- rolls back; notifications with the same payload in one transaction are folded into
-- one, so queueing a thousand jobs at once wakes a worker once.
-- A job whose unique key is already waiting or in work inserts nothing, so nothing comes
-- back and nobody is notified: the row trigger that keeps job_unique_keys (schema.sql,
-- step 15) skips it, waiting first, as a unique index would, for a transaction that took
-- the key and has not ended.
-- Only the id comes back: pg_notify is called in a subquery, once for each row queued
-- (PostgreSQL neither flattens a subquery whose output calls a volatile function nor
-- drops that call when the output goes unread), so the caller reads no void column.
WITH queued AS (
    INSERT INTO jobs (queue, name, args, run_at, scheduled, priority, max_attempts, key, unique_key, batch, flow,
        secret, queued_at)
    VALUES (%(queue)s, %(name)s, %(args)s, COALESCE(%(run_at)s, {now}), COALESCE(%(run_at)s > {now}, false),
        %(priority)s, %(max_attempts)s, %(key)s, %(unique)s, %(batch)s, %(flow)s, %(secret)s, {now})
    RETURNING id
)
SELECT id FROM (SELECT id, pg_notify('jobs', %(queue)s) FROM queued) AS woken

-- name: claim
-- The claim, in one statement that commits at once: the first due jobs of the queue in
-- the order priority, run_at, id, skipping rows other workers hold locked at this instant
-- (FOR UPDATE SKIP LOCKED: no worker waits on another, none takes a row twice). It counts
-- the attempt, writes the claim's token and moves run_at on: that is the lease. Nothing
-- stays locked while the jobs run, so a worker that dies leaves its rows to be claimed
-- again when the lease runs out. The old run_at comes back as due_at (the claim's order)
-- and the statement's moment as claimed_at (how long the job waited, pulse.py), under the
-- names of core.Job's fields.
-- A Worker's claim records the worker (%(worker)s, its row in job_workers) and moves
-- run_at to %(held)s, HELD: no lease runs out while that worker beats, and nothing writes
-- the row to keep it; when it falls silent, another's reaper (orphans) lets the lease run
-- out. A claim with no worker (`worked`) holds the job for %(lease)s, counted from the
-- instant the row is written ({clock}), so a claim that waited never commits a lease
-- already run out.
-- It writes the attempts the performer's policy allows (%(budgets)s, name: attempts), so
-- the row knows from attempt 1 which is its last, wherever its fate is decided.
-- A job with a concurrency key waits while a job of its key is under a claim or still
-- runs after its row was settled without it (job_let_go); it takes its key's slot 0, and
-- job_keys_held refuses the second of two claims side by side. The claimed keys
-- and job_limits are read once per statement, not once per row. A job an operator
-- cancelled is never claimed; a queue with a limit is claimed by claim_limited only.
-- LIMIT is written into the text, not passed: a generic plan that does not know it
-- expects many rows and reads the whole table. The due bound sits in a scalar subquery,
-- which the planner cannot see into: it assumes a share of the queue is due and walks
-- jobs_ready in order, stopping at LIMIT, where statistics taken while the queue was
-- quiet would make it sort the whole backlog. {bound} is empty, or a row comparison on
-- the index's columns that seeks past dead entries a held snapshot keeps (frontier.py).
-- The walk is a MATERIALIZED CTE, run once, and the update finds its rows by id: as a
-- subquery, a busy table's first statistics could plan a nested loop that ran the walk,
-- and took its locks, again for every row.
WITH due AS MATERIALIZED (
    SELECT id, run_at AS due_at
    FROM jobs
    WHERE queue = %(queue)s AND NOT scheduled AND attempts < max_attempts AND run_at <= (SELECT {now}){bound}
        AND cancelled_at IS NULL
        AND (key IS NULL OR key NOT IN (SELECT key FROM job_keys_held
            UNION ALL SELECT key FROM job_let_go WHERE key IS NOT NULL))
        AND NOT EXISTS (SELECT FROM job_limits WHERE queue = %(queue)s)
    ORDER BY priority, run_at, id
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs
SET run_at = COALESCE(%(held)s::bigint, {clock} + %(lease)s), attempts = attempts + 1, claim = %(claim)s,
    worker = %(worker)s::bigint, key_slot = 0,
    max_attempts = COALESCE((%(budgets)s::jsonb ->> jobs.name)::integer, jobs.max_attempts)
FROM due
WHERE jobs.id = due.id AND jobs.id = ANY (ARRAY(SELECT id FROM due))
RETURNING jobs.id, jobs.queue, jobs.name, jobs.args, jobs.priority, due.due_at,
    jobs.attempts AS attempt, jobs.max_attempts, jobs.key, jobs.batch, jobs.flow, jobs.claim,
    (SELECT {now}) AS claimed_at

-- name: first_due
-- Where the first due job of a queue sits in the claim's order: the same walk as the
-- claim's, without its locks and without its concurrency-key test, so a job waiting
-- for its key, or locked by a claim at this instant, still counts as due (frontier.py).
-- {bound} is empty (a look from the front) or the claim's own bound (a look from where
-- the claims start, when one from the front ran out of patience).
SELECT priority, run_at, id
FROM jobs
WHERE queue = %(queue)s AND NOT scheduled AND attempts < max_attempts AND run_at <= (SELECT {now}){bound}
ORDER BY priority, run_at, id
LIMIT 1

-- name: snapshot_held
-- For how many seconds the oldest snapshot (or running xid) that another session of
-- this database holds has been held, or a prepared transaction kept; a replication
-- slot whose xmin lags 1,000 transactions counts as held for good. Dead entries the
-- horizon has not passed cannot be removed yet (frontier.py). 0 when none is held.
SELECT coalesce(max(held), 0) FROM (
    SELECT extract(epoch FROM statement_timestamp() - xact_start) AS held FROM pg_stat_activity
    WHERE pid <> pg_backend_pid() AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
        AND (datname = current_database() OR datname IS NULL)
    UNION ALL
    SELECT extract(epoch FROM statement_timestamp() - prepared) FROM pg_prepared_xacts
    WHERE database = current_database()
    UNION ALL
    SELECT 'Infinity'::numeric FROM pg_replication_slots WHERE age(xmin) > 1000
) AS snapshots

-- name: look_patience
-- How long the look's walk may take, for its own transaction only (LOOK_PATIENCE).
SELECT set_config('statement_timeout', %(timeout)s, true)

-- name: finish
-- A job that succeeded is deleted, on the transaction that holds its performer's
-- writes, but only while the claim is still ours: a worker that lost its lease must
-- not delete a row another worker now holds, nor a row an operator cancelled while
-- it ran (its fate is the shelf: outcomes.cancelled_or_lost), unless its performer
-- had passed its point of no return (`irrevocable`, Job.point_of_no_return): shelved,
-- what it did could be done again by a retry. The ids that come back tell which were
-- deleted. The row lock it takes makes a cancel that comes later wait for the commit,
-- which follows at once, and then find nothing to cancel.
DELETE FROM jobs WHERE id = ANY(%(ids)s) AND claim = %(claim)s
    AND (cancelled_at IS NULL OR id = ANY(%(irrevocable)s))
RETURNING id

-- name: finish_one
-- finish, for the one job whose writes share its transaction (outcomes.success_committed):
-- the same guard, with the id as a plain parameter, because an array of one costs the
-- worker more to send than the statement costs the server to run.
DELETE FROM jobs WHERE id = %(id)s AND claim = %(claim)s AND (cancelled_at IS NULL OR %(irrevocable)s)

-- name: fail
-- A failed attempt keeps its reason and waits for its next run; max_attempts is
-- where the performer's policy ends the retries (set to attempts, it fails for good).
-- Like finish, it leaves alone a row another worker holds or an operator cancelled:
-- a cancelled job is never retried, whatever its attempt raised.
-- ran keeps the ms the attempt ran under the index of the reason appended here (SET
-- reads the row as it was, so jsonb_array_length(reasons) is that index).
UPDATE jobs
SET failure = %(reason)s, traceback = %(traceback)s, run_at = {now} + %(wait)s, scheduled = %(wait)s > 0,
    max_attempts = %(max_attempts)s, claim = NULL,
    reasons = reasons || jsonb_build_array(%(reason)s::text),
    ran = coalesce(ran, '{}'::jsonb) || jsonb_build_object(jsonb_array_length(reasons)::text, %(ran)s::integer)
WHERE id = %(id)s AND claim = %(claim)s AND cancelled_at IS NULL

-- name: release
-- Claimed jobs a worker gives back go back as they were, due at once, their attempt not
-- counted: jobs it never started (claimed behind a slow one, or before a stop), a claim
-- whose answer its thread never read, and jobs whose shutdown's grace ran out. Each row's
-- own claim token (they may come from several claims) keeps it from touching a job
-- another worker holds, or one settled since. Each is due again at the moment it was due
-- before the claim (a stray, whose moment the worker never learnt, passes HELD: now), so
-- it keeps its place in the claim's order, ahead of jobs queued since, and a job of a
-- schedule keeps its tick. A job an operator cancelled keeps its claim instead, its
-- lease run out: the claim passes it over and cancelled_reaped puts it on the shelf, so
-- it never runs. The batches of the rows come back, for skip_given_back.
UPDATE jobs
SET run_at = LEAST(given.due_at, {now}), attempts = jobs.attempts - 1,
    claim = CASE WHEN jobs.cancelled_at IS NULL THEN NULL ELSE jobs.claim END
FROM unnest(%(ids)s::bigint[], %(due_ats)s::bigint[], %(claims)s::bigint[]) AS given (id, due_at, claim)
WHERE jobs.id = given.id AND jobs.claim = given.claim
RETURNING jobs.id, jobs.queue, jobs.batch, jobs.flow ? 'callback' AS callback

-- name: lapse
-- The leases of jobs a worker was cut off from while they ran (its thread's connection
-- dropped) run out now instead of when the worker goes: the attempt stays counted, as
-- after a crash, and the job is due again at once; its writes were rolled back with the
-- connection. A job with attempts left gives up its claim, and with it its concurrency
-- key; one on its last attempt keeps it, for the reaper to shelve with its reason, as
-- after a crash; so does one an operator cancelled, for cancelled_reaped. Each row's
-- own claim token keeps it from touching jobs another worker holds, or rows settled.
UPDATE jobs SET run_at = {now},
    claim = CASE WHEN jobs.attempts < jobs.max_attempts AND jobs.cancelled_at IS NULL THEN NULL ELSE jobs.claim END
FROM unnest(%(ids)s::bigint[], %(claims)s::bigint[]) AS given (id, claim)
WHERE jobs.id = given.id AND jobs.claim = given.claim

-- name: held_by
-- The rows the database says a worker holds, for its keeper to compare with what its
-- threads hold (holdings.py): read from jobs_claimed, at run_at HELD.
SELECT id, claim FROM jobs WHERE claim IS NOT NULL AND run_at = %(held)s AND worker = %(worker)s

-- name: reap
-- Jobs whose worker died on their last attempt: the lease ran out, and no attempt is
-- left to claim them with. They become failures for good, with a reason to read, and
-- give up their claim (and so their concurrency key); their chains and batches hear
-- of the failure as they would of any other. They come back as store.Job rows, as
-- claimed jobs do, for the runner to settle their flows.
-- A row locked now (its frozen worker's settlement holds it) is skipped, for a later pass.
UPDATE jobs
SET claim = NULL, failure = 'its worker stopped during the last attempt',
    reasons = reasons || '["its worker stopped during the last attempt"]'
WHERE id IN (SELECT id FROM jobs WHERE claim IS NOT NULL AND run_at <= {now} AND attempts >= max_attempts
    FOR UPDATE SKIP LOCKED)
RETURNING id, queue, name, args, priority, run_at AS due_at, attempts AS attempt, max_attempts, key, batch,
    flow, claim, {now} AS claimed_at, true AS final

-- name: expire
-- Keyed jobs whose lease ran out give their key back, so that they (or another job
-- of their key) can be claimed again; a worker that still settles one finds its
-- claim gone and is refused, as it would be after any other claim. A cancelled job
-- keeps its claim for cancelled_reaped.
UPDATE jobs SET claim = NULL
WHERE id IN (SELECT id FROM jobs WHERE claim IS NOT NULL AND key IS NOT NULL AND run_at <= {now}
    AND attempts < max_attempts AND cancelled_at IS NULL FOR UPDATE SKIP LOCKED)

-- name: promote
-- Jobs scheduled for a moment that has come join the claim's index, and the workers of
-- their queues are woken. Every worker's listener runs it every POLL_INTERVAL, so a
-- scheduled job starts within about that much of its moment.
WITH promoted AS (
    UPDATE jobs SET scheduled = false
    WHERE scheduled AND run_at <= {now}
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
    AND ((attempts < max_attempts AND run_at <= {now}) OR (claim IS NOT NULL AND run_at > {now}))

-- Chains and batches (flows.py) ---------------------------------------------------

-- name: new_batch
-- The batch is written before its jobs, in the same transaction as they are.
INSERT INTO job_batches (queue, total, pending, on_success, on_failure, always, created_at)
VALUES (%(queue)s, %(total)s, %(total)s, %(on_success)s, %(on_failure)s, %(always)s, {now})
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
    finished_at = CASE WHEN pending - %(settled)s <= 0 THEN {now} END
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
SET cancelled_at = coalesce(cancelled_at, {now}),
    cancelled = cancelled + (SELECT count(*) FROM skipped)
WHERE id = %(id)s AND finished_at IS NULL
RETURNING (SELECT count(*) FROM skipped)

-- name: skip_given_back
-- After jobs of a batch were given back unstarted (a worker's watch, a shutdown), the
-- batch may have been cancelled while they sat in a worker's hand: they are skipped
-- now as cancel_batch skips waiting ones. Nothing happens to a batch not cancelled.
WITH skipped AS (
    DELETE FROM jobs
    WHERE batch = %(id)s AND claim IS NULL AND attempts < max_attempts
        AND (flow IS NULL OR NOT flow ? 'callback')
        AND EXISTS (SELECT FROM job_batches WHERE id = %(id)s AND cancelled_at IS NOT NULL AND finished_at IS NULL)
    RETURNING id
)
UPDATE job_batches
SET cancelled = cancelled + (SELECT count(*) FROM skipped)
WHERE id = %(id)s AND cancelled_at IS NOT NULL AND finished_at IS NULL
RETURNING (SELECT count(*) FROM skipped)

-- name: batch_status
SELECT id, total, pending, failed, cancelled, finished_at IS NOT NULL AS finished,
    cancelled_at IS NOT NULL AS cancelling
FROM job_batches WHERE id = %(id)s

-- name: prune_batches
DELETE FROM job_batches WHERE finished_at IS NOT NULL AND finished_at < {now} - %(older_than)s

-- name: later_many
-- Many jobs at once: COPY is the fastest way into a table, several times faster
-- than INSERTs, and one notification wakes the workers for all of them.
COPY jobs (queue, name, args, run_at, scheduled, priority, max_attempts, secret, queued_at) FROM STDIN

-- name: secret_of
-- The secret arguments of a job whose attempt failed, read only then (running.py), so
-- that a claim, which most jobs never follow with a failure, carries none of them.
SELECT secret FROM jobs WHERE id = %(id)s

-- name: notify
SELECT pg_notify('jobs', %(queue)s)

-- name: now
-- The database's moment, for what is computed before a statement can: the rows of a COPY.
SELECT {now}

-- The failed shelf and status (shelf.py) ------------------------------------------
-- A job is on the shelf when it has no attempts left and no claim holds it: it
-- failed for good, or its worker died on its last attempt and a heartbeat reaped it.
-- Its run_at is then the moment it failed (or the end of its lost lease).

-- name: shelf_page
-- One page of the shelf, newest first: the jobs failed for good with an id below
-- %(before)s (the last id of the page before; NULL for the first page). The partial
-- index jobs_shelf holds the shelf alone in id order, so the page is the first
-- {limit} entries of a backward index scan below that id, however big the shelf
-- is and however many jobs wait beside it: a keyset, not an OFFSET, which would read
-- and throw away every row of the pages before. The limit is written in, as the
-- claim's is, so no generic plan guesses at it; and "before" is one range with the
-- largest bigint for the first page, since a generic plan cannot start an index scan
-- at "$1 IS NULL OR id < $1" and would read the shelf from its newest end.
SELECT id, queue, name, args, attempts, run_at AS failed_at, failure, traceback, reasons, retries
FROM jobs
WHERE attempts >= max_attempts AND claim IS NULL
    AND id < coalesce(%(before)s, 9223372036854775807)
ORDER BY id DESC
LIMIT {limit}

-- name: shelf_page_of_queue
-- The same page of one queue's shelf, read from jobs_shelf_queue (queue, id).
SELECT id, queue, name, args, attempts, run_at AS failed_at, failure, traceback, reasons, retries
FROM jobs
WHERE attempts >= max_attempts AND claim IS NULL AND queue = %(queue)s
    AND id < coalesce(%(before)s, 9223372036854775807)
ORDER BY id DESC
LIMIT {limit}

-- name: shelf_job
-- One job of the shelf by id, for a job's page.
SELECT id, queue, name, args, attempts, run_at AS failed_at, failure, traceback, reasons, retries
FROM jobs
WHERE id = %(id)s AND attempts >= max_attempts AND claim IS NULL

-- name: shelf_batch
-- The next ids of the shelf after %(after)s in id order, for retrying or discarding
-- the whole shelf a batch at a time (SHELF_BATCH): each batch is a transaction of its
-- own, so a million failed jobs are never locked, nor their WAL held, all at once.
-- Oldest first, so of failed jobs sharing a unique key the oldest is retried first.
SELECT id FROM jobs
WHERE attempts >= max_attempts AND claim IS NULL AND id > %(after)s
ORDER BY id
LIMIT %(limit)s

-- name: retry
-- Jobs from the shelf go back in the queue, due at once, with their attempts counted
-- from 0 again; their reasons stay. A job with attempts left holds its unique key again
-- (job_unique_keys), so a job whose unique key another job holds now stays on the
-- shelf, and of shelved jobs sharing a key only the oldest comes back: without these
-- two tests the UPDATE would fail as the key's row is written. FOR UPDATE makes a job that
-- another session retries or discards at the same moment be read again and left alone.
-- A job of a batch leaves its batch: the batch counted its failure already, and must
-- not count the job a second time when it settles now. A batch's callback keeps it.
-- Like `later`, it wakes the workers of each queue when the caller's transaction commits.
-- A job cancelled while it ran comes back without its mark (cancelled_at, below).
-- retries keeps how many reasons the job held at each retry: where each run's begin.
WITH shelved AS (
    SELECT id, unique_key
    FROM jobs AS j
    WHERE attempts >= max_attempts AND claim IS NULL
        AND id = ANY(%(ids)s)
        AND NOT EXISTS (
            SELECT 1 FROM job_unique_keys AS holder WHERE holder.unique_key = j.unique_key)
    FOR UPDATE
), chosen AS (
    SELECT id FROM shelved
    WHERE unique_key IS NULL
        OR id = (SELECT min(id) FROM shelved AS twin WHERE twin.unique_key = shelved.unique_key)
), back AS (
    UPDATE jobs
    SET attempts = 0, max_attempts = %(attempts)s, run_at = {now}, scheduled = false, cancelled_at = NULL,
        batch = CASE WHEN flow ? 'callback' THEN batch END,
        retries = coalesce(retries, '{}'::integer[]) || jsonb_array_length(reasons)
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
    AND id = ANY(%(ids)s)

-- name: status
-- Each queue's jobs counted by state at {now}, read from the partial indexes and
-- never from the whole table: every row is in exactly one of jobs_ready (attempts
-- left, not scheduled), jobs_scheduled_by_queue (scheduled), jobs_shelf_queue (failed for
-- good) and jobs_claimed (under a claim, read for in_work), so the four together
-- name every queue (a loose index scan each: one index probe per distinct queue,
-- not one per row) and count every job.
--   due        may run now: due, or its lease ran out with attempts left to claim it by
--   scheduled  waits for a later moment (a retry, or a job queued with `at`)
--   in_work    held by a claim whose lease runs, or that lost its worker on the last
--              attempt (until a heartbeat reaps it onto the shelf)
--   failed     on the shelf
--   paused     the queue is in job_paused_queues (paused, below)
--   limit_*    its limit (job_limits: limits.py), NULL where none is set, and limit_used
--              the claims in the rate's window that ends now
-- A count of a million entries takes longer than the whole answer may (STATUS_EXACT,
-- shelf.py), so due, scheduled and failed are each counted to at most {over} entries
-- per part (LIMIT, written in as the claim's is): a count under it is exact, one that
-- reaches it is a lower bound that shelf.py says is an estimate. A lower bound stays
-- true however the table changes; a kept counter would have to be updated by every
-- insert and settlement, on one hot row per queue. in_work reads the claimed rows,
-- which are few (at most the workers' threads times BATCH_MAX), and is always exact.
-- The oldest due age reads the first entry of jobs_scheduled_by_queue, and the due
-- entries of jobs_ready (its order is priority first): with a large backlog of due
-- jobs that part reads the backlog, which is what the workers are working through.
WITH RECURSIVE ready(queue) AS (
    (SELECT queue FROM jobs WHERE attempts < max_attempts AND NOT scheduled ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM jobs WHERE attempts < max_attempts AND NOT scheduled AND queue > ready.queue
            ORDER BY queue LIMIT 1)
    FROM ready WHERE ready.queue IS NOT NULL
), waiting(queue) AS (
    (SELECT queue FROM jobs WHERE scheduled ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM jobs WHERE scheduled AND queue > waiting.queue ORDER BY queue LIMIT 1)
    FROM waiting WHERE waiting.queue IS NOT NULL
), shelved(queue) AS (
    (SELECT queue FROM jobs WHERE attempts >= max_attempts AND claim IS NULL ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT queue FROM jobs WHERE attempts >= max_attempts AND claim IS NULL AND queue > shelved.queue
            ORDER BY queue LIMIT 1)
    FROM shelved WHERE shelved.queue IS NOT NULL
), queues(queue) AS (
    SELECT queue FROM ready WHERE queue IS NOT NULL
    UNION SELECT queue FROM waiting WHERE queue IS NOT NULL
    UNION SELECT queue FROM shelved WHERE queue IS NOT NULL
    UNION SELECT queue FROM jobs WHERE claim IS NOT NULL
    UNION SELECT queue FROM job_paused_queues
    UNION SELECT queue FROM job_limits
)
SELECT queues.queue,
    (SELECT count(*) FROM (SELECT FROM jobs WHERE queue = queues.queue
        AND attempts < max_attempts AND NOT scheduled AND run_at <= {now} LIMIT {over}) AS part)
    + (SELECT count(*) FROM (SELECT FROM jobs WHERE queue = queues.queue
        AND scheduled AND run_at <= {now} LIMIT {over}) AS part) AS due,
    (SELECT count(*) FROM (SELECT FROM jobs WHERE queue = queues.queue
        AND scheduled AND run_at > {now} LIMIT {over}) AS part)
    + (SELECT count(*) FROM (SELECT FROM jobs WHERE queue = queues.queue
        AND attempts < max_attempts AND NOT scheduled AND run_at > {now} AND claim IS NULL LIMIT {over}) AS part)
        AS scheduled,
    (SELECT count(*) FROM jobs WHERE queue = queues.queue
        AND claim IS NOT NULL AND (run_at > {now} OR attempts >= max_attempts)) AS in_work,
    (SELECT count(*) FROM (SELECT FROM jobs WHERE queue = queues.queue
        AND attempts >= max_attempts AND claim IS NULL LIMIT {over}) AS part) AS failed,
    ({now} - least(
        (SELECT min(run_at) FROM jobs WHERE queue = queues.queue
            AND attempts < max_attempts AND NOT scheduled AND run_at <= {now}),
        (SELECT min(run_at) FROM jobs WHERE queue = queues.queue AND scheduled AND run_at <= {now})
    ))::float8 / 1000 AS oldest_due_age,
    EXISTS (SELECT FROM job_paused_queues AS p WHERE p.queue = queues.queue) AS paused,
    l.rate AS limit_rate, l.per_ms AS limit_per_ms, l.concurrency AS limit_concurrency, l.per_key AS limit_per_key,
    (SELECT count(*) FROM unnest(l.starts) AS s WHERE s > {now} - l.per_ms)::integer AS limit_used
FROM queues LEFT JOIN job_limits AS l ON l.queue = queues.queue
ORDER BY queues.queue

-- name: index_sizes
-- How many entries each partial index behind a status figure held at the last VACUUM
-- or ANALYZE (ANALYZE counts a partial index's share of its sample): the estimate of
-- a figure past STATUS_EXACT. reltuples is -1 before the first of either.
SELECT relname AS index, reltuples::bigint AS entries
FROM pg_class
WHERE oid IN (to_regclass('jobs_ready'), to_regclass('jobs_scheduled'), to_regclass('jobs_shelf'))

-- Operating the queue (control.py): pausing queues, cancelling jobs ---------------

-- name: pause
-- Pausing a paused queue changes nothing and answers no row.
INSERT INTO job_paused_queues (queue, paused_at) VALUES (%(queue)s, {now})
ON CONFLICT (queue) DO NOTHING
RETURNING queue

-- name: resume
DELETE FROM job_paused_queues WHERE queue = %(queue)s RETURNING queue

-- name: paused_queues
-- Read by each worker once per POLL_INTERVAL: a handful of rows at most.
SELECT queue, paused_at FROM job_paused_queues ORDER BY queue

-- name: hasten
-- Run now: a job waiting for a later moment (scheduled: queued with `at`, or a retry's
-- backoff) is due at once, in the claim's index, and its queue's workers are woken
-- when the caller's transaction commits. Only a job with attempts left that no claim
-- holds and whose moment has not come: one in work, due already or on the shelf (whose
-- way back is retry) is left alone, and nothing comes back.
WITH hastened AS (
    UPDATE jobs SET run_at = {now}, scheduled = false
    WHERE id = %(id)s AND claim IS NULL AND attempts < max_attempts AND (scheduled OR run_at > {now})
    RETURNING queue
)
SELECT queue, pg_notify('jobs', queue) FROM hastened

-- name: cancel_locked
-- The rows of the jobs to cancel, locked in id order before anything else (control.py).
SELECT id FROM jobs WHERE id = ANY(%(ids)s) ORDER BY id FOR UPDATE

-- name: paused_holding
-- The paused queues holding any of the jobs %(ids)s, or with NULL any job with attempts
-- left that no claim holds (what a retry of the whole shelf put back): for a retry to
-- say that its jobs wait for the queue to be resumed. A handful of rows, each one probe.
SELECT p.queue FROM job_paused_queues AS p
WHERE EXISTS (
    SELECT FROM jobs WHERE jobs.queue = p.queue
        AND (jobs.id = ANY(%(ids)s::bigint[])
            OR (%(ids)s::bigint[] IS NULL AND attempts < max_attempts AND claim IS NULL)))
ORDER BY p.queue

-- name: cancel_waiting
-- Cancelled jobs that no live claim holds go on the shelf at once, as failed for good
-- with the reason "cancelled": max_attempts = attempts takes them out of the claim's
-- index, so they never run, and an operator finds them where failed jobs are, to
-- retry or discard. A job whose lease ran out counts as waiting: its worker is gone,
-- and clearing its claim fences that worker's late settlement. The rows come back
-- for chains and batches to hear that these jobs ended, as after a failure for good.
UPDATE jobs
SET max_attempts = attempts, claim = NULL, scheduled = false, run_at = {now},
    failure = 'cancelled', traceback = '', reasons = reasons || '["cancelled"]'
WHERE id = ANY(%(ids)s) AND attempts < max_attempts AND (claim IS NULL OR run_at <= {now})
RETURNING id, name, queue, batch, flow

-- name: cancel_running
-- A cancelled job under a live claim is marked, not touched otherwise: its worker
-- reads the mark on its heartbeat (cancelled_among) and settles the job with
-- cancellation_settled. A job marked already keeps its first moment. A job in its
-- last attempt (attempts = max_attempts) is still in work while its claim lives.
UPDATE jobs SET cancelled_at = coalesce(cancelled_at, {now})
WHERE id = ANY(%(ids)s) AND claim IS NOT NULL AND run_at > {now}
RETURNING id

-- name: cancelled_among
-- Which of a worker's held jobs were asked to stop, for its heartbeat.
SELECT id FROM jobs WHERE id = ANY(%(ids)s) AND claim = %(claim)s AND cancelled_at IS NOT NULL

-- name: cancellation_settled
-- The settlement of a job cancelled while it ran, whatever its performer did: on the
-- shelf with the reason "cancelled", never retried, and only while the claim is still
-- this worker's (the same fence as every settlement). The listener's chores and the
-- runner both may send it for one job; the claim it clears lets only the first settle.
UPDATE jobs
SET max_attempts = attempts, claim = NULL, scheduled = false, run_at = {now},
    failure = 'cancelled', traceback = %(traceback)s, reasons = reasons || '["cancelled"]'
WHERE id = %(id)s AND claim = %(claim)s AND cancelled_at IS NOT NULL
RETURNING id, name, queue, batch, flow

-- name: cancelled_reaped
-- Marked jobs whose lease ran out (their worker died before it settled them) go on
-- the shelf as cancelled, rather than be claimed and run again; a worker's heartbeat
-- runs it beside the reaper.
UPDATE jobs
SET max_attempts = attempts, claim = NULL, scheduled = false,
    failure = 'cancelled', reasons = reasons || '["cancelled"]'
WHERE id IN (SELECT id FROM jobs WHERE cancelled_at IS NOT NULL AND claim IS NOT NULL AND run_at <= {now}
    FOR UPDATE SKIP LOCKED)
RETURNING id, name, queue, batch, flow

-- Workers (control.py) -------------------------------------------------------------------

-- name: register
-- A worker writes its row before any of its threads claims, and again on each new
-- connection of its heartbeat, which takes back a row another worker's reaper marked
-- gone while this one was cut off. The RETURNING subquery reads the row as it was
-- before this statement: the ending it had, NULL for a row new or still working.
INSERT INTO job_workers (id, host, pid, queues, threads, lease, version, started_at, beat_at)
VALUES (%(id)s, %(host)s, %(pid)s, %(queues)s, %(threads)s, %(lease)s, %(version)s, {clock}, {clock})
ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at, ended_at = NULL, ending = NULL
RETURNING (SELECT ending FROM job_workers WHERE id = %(id)s)

-- name: beat
-- The heartbeat: the worker's own row, which no statement on jobs locks, so it never
-- waits on a job. No row comes back when a reaper took the worker for gone (or the row
-- was deleted): the worker then registers again.
UPDATE job_workers SET beat_at = {clock} WHERE id = %(id)s AND ended_at IS NULL RETURNING id

-- name: sign_off
-- A clean stop: every job the worker held is settled or given back by now.
UPDATE job_workers SET ended_at = {clock}, ending = 'stopped' WHERE id = %(id)s AND ended_at IS NULL

-- name: orphans
-- The reaper's first step. Workers whose last beat is older than %(silent)s of their
-- own lease are taken for gone, and the jobs held by the claims of any worker marked
-- gone (silent now, or stopped with a job still held) have their lease run out now:
-- from here they are what a lease that ran out leaves, and the rest of the reaper
-- (expire, cancelled_reaped, reap) and the claim treat them so.
-- The test names workers marked gone, never "not among the working": a worker that
-- registered after this statement's snapshot and claimed one of these rows since
-- would fail such a test when the row is read again at its newest version.
-- Rows locked at this instant are skipped (SKIP LOCKED), never waited on: a worker frozen
-- between a settlement's statement and its COMMIT (a paused VM, a debugger) holds its
-- row's lock for as long as it is frozen, and a reaper that waited on it would mark no
-- worker gone and free no job meanwhile. The skipped row is freed by a later pass.
WITH gone AS (
    UPDATE job_workers SET ended_at = {now}, ending = 'silent'
    WHERE ended_at IS NULL AND beat_at < {now} - lease * %(silent)s
    RETURNING id
)
UPDATE jobs SET run_at = {now}
WHERE id IN (
    SELECT id FROM jobs
    WHERE claim IS NOT NULL AND run_at > {now} AND worker IS NOT NULL
        AND (worker IN (SELECT id FROM gone) OR worker IN (SELECT id FROM job_workers WHERE ended_at IS NOT NULL))
    FOR UPDATE SKIP LOCKED)
RETURNING id, worker

-- name: workers_pruned
-- Rows of workers gone for longer than %(kept)s ms; their jobs went back when they went.
DELETE FROM job_workers WHERE ended_at < {now} - %(kept)s

-- name: let_go_pruned
-- The performers let go (job_let_go) that workers gone or stopped left: their threads
-- went with them (or run on in a process that stopped working). Until this runs the
-- claims count them, as they count a claim whose lease ran out until expire: stricter.
DELETE FROM job_let_go WHERE worker NOT IN (SELECT id FROM job_workers WHERE ended_at IS NULL)

-- name: workers
-- The workers still at work and those gone within %(kept)s ms, newest first, with how
-- many jobs each holds now (read from jobs_claimed: only held rows are in it).
SELECT w.id, w.host, w.pid, w.queues, w.threads, w.lease, w.version, w.started_at, w.beat_at, w.ended_at,
    w.ending, {now} AS now,
    (SELECT count(*) FROM jobs WHERE jobs.worker = w.id AND claim IS NOT NULL AND run_at > {now}) AS holding
FROM job_workers AS w
WHERE w.ended_at IS NULL OR w.ended_at >= {now} - %(kept)s
ORDER BY w.ended_at IS NOT NULL, w.started_at DESC, w.id

-- Performers let go (control.py) ---------------------------------------------------

-- name: let_go_recorded
-- A worker's performers that still run while their rows are settled without them (a
-- timeout, a stop's grace, an operator's cancel), written before that settlement, so
-- the claims count the performer in work with no gap: by its claim until the
-- settlement commits, by this row from then. Each row's queue, key and slot are read
-- from the job's row, while it is still under that claim; one recorded already is kept.
INSERT INTO job_let_go (job, claim, worker, queue, key, key_slot)
SELECT jobs.id, jobs.claim, jobs.worker, jobs.queue, jobs.key, jobs.key_slot
FROM jobs JOIN unnest(%(ids)s::bigint[], %(claims)s::bigint[]) AS given (id, claim)
    ON jobs.id = given.id AND jobs.claim = given.claim
WHERE jobs.worker IS NOT NULL
ON CONFLICT (job, claim) DO NOTHING

-- name: let_go_forgotten
-- The rows of performers that have returned: their room is free again.
DELETE FROM job_let_go AS g
USING unnest(%(ids)s::bigint[], %(claims)s::bigint[]) AS given (id, claim)
WHERE g.job = given.id AND g.claim = given.claim

-- Limits (limits.py) -------------------------------------------------------------

-- name: limit_set
-- A queue's limit, new or changed; the moments of the window's claims are kept, so a
-- rate lowered while the window is full holds at once.
INSERT INTO job_limits (queue, rate, per_ms, concurrency, per_key, changed_at)
VALUES (%(queue)s, %(rate)s, %(per_ms)s, %(concurrency)s, %(per_key)s, {now})
ON CONFLICT (queue) DO UPDATE SET rate = excluded.rate, per_ms = excluded.per_ms,
    concurrency = excluded.concurrency, per_key = excluded.per_key, changed_at = excluded.changed_at

-- name: limit_removed
DELETE FROM job_limits WHERE queue = %(queue)s RETURNING queue

-- name: claim_limited
-- The claim of a limited queue: one job, within the room its limit leaves, and in the
-- same answer when that room comes back. Three steps, one statement, one round trip:
--   `due` locks the first due job as the plain claim's walk does (FOR UPDATE SKIP
--   LOCKED), one at most: a start is counted per job, so none is held ahead of the room.
--   `counted` writes the start in the queue's row of job_limits, but only while the row
--   says there is room; its row lock makes the claims of one limited queue take turns
--   across every worker. A claim that waited for that lock reads the row again as its
--   predecessor committed it, and its WHERE is evaluated again on it, the moment
--   ({clock}) included, so each claim's moment follows its predecessor's commit. The
--   rate has room while the window holds fewer than `rate` starts. `starts` keeps the
--   moments of the window's claims in order, oldest first (a moment is never written
--   before the last one, should the clock step back), so that is one element's test:
--   the rate-th newest start is out of the window. The write drops the starts out of
--   the window, found by width_bucket's binary search. The
--   concurrency has room while fewer than `concurrency` jobs of the queue are under a
--   claim whose lease runs (from jobs_claimed: a dead worker's job frees its slot when
--   the reaper lets its lease run out), counting too the jobs claimed under the limit
--   that this statement's snapshot, older than the lock, does not see: the row's
--   `claimed` counter as the lock reads it, less the same as the snapshot sees it
--   (`seen`). A job they claimed and that was settled since counts twice, never none:
--   the room errs low, never high. A performer still running after its job was settled
--   without it (job_let_go) counts too, until the reaper prunes a gone worker's: its row
--   is written before the settlement clears the claim, so the snapshot sees one or the other.
--   `taken` claims the job only if the start was written.
-- A key's jobs: without a limit per key, {full} is empty and {slot} is 0, and the walk
-- passes over a key with a job in work, as the plain claim's does. With one (per_key),
-- they are the two statements below, written in: the walk passes over a key only once
-- it has per_key jobs in work, and the job takes the first of its key's slots 0 to
-- per_key - 1 that no job of the key holds. A worker picks the one its last read of the
-- limits calls for (limits.py): the first, for a limit per key set since, is stricter.
-- The answer is a row per job taken; with none taken, one row of NULLs whose room_ms
-- says in how many ms the window has room again when it is full (NULL otherwise); and no
-- row at all when the queue has no limit now, so the caller claims it as any other.
-- The row is written only when there is room, not locked first and written after: one
-- write of the queue's row per claim, not two.
WITH due AS MATERIALIZED (
    SELECT id, run_at AS due_at
    FROM jobs
    WHERE queue = %(queue)s AND NOT scheduled AND attempts < max_attempts AND run_at <= (SELECT {now}){bound}
        AND cancelled_at IS NULL
        AND (key IS NULL OR key NOT IN (SELECT key FROM (
            SELECT key FROM job_keys_held
            UNION ALL SELECT key FROM job_let_go WHERE key IS NOT NULL) AS in_work{full}))
    ORDER BY priority, run_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), counted AS (
    UPDATE job_limits AS l
    SET starts = CASE WHEN l.rate IS NULL THEN l.starts
            ELSE l.starts[width_bucket({clock} - l.per_ms, l.starts) + 1:]
                || greatest({clock}, l.starts[cardinality(l.starts)]) END,
        claimed = l.claimed + 1
    WHERE l.queue = %(queue)s AND EXISTS (SELECT FROM due)
        AND (l.rate IS NULL OR cardinality(l.starts) < l.rate
            OR l.starts[cardinality(l.starts) - l.rate + 1] <= {clock} - l.per_ms)
        AND (l.concurrency IS NULL OR l.concurrency > l.claimed
            - coalesce((SELECT seen.claimed FROM job_limits AS seen WHERE seen.queue = %(queue)s), 0)
            + (SELECT count(*) FROM jobs WHERE queue = %(queue)s AND claim IS NOT NULL AND run_at > {clock})
            + (SELECT count(*) FROM job_let_go WHERE queue = %(queue)s))
    RETURNING l.per_key
), taken AS (
    UPDATE jobs
    SET run_at = COALESCE(%(held)s::bigint, {clock} + %(lease)s), attempts = attempts + 1, claim = %(claim)s,
        worker = %(worker)s::bigint,
        key_slot = {slot},
        max_attempts = COALESCE((%(budgets)s::jsonb ->> jobs.name)::integer, jobs.max_attempts)
    FROM due
    WHERE jobs.id = due.id AND jobs.id = (SELECT id FROM due) AND EXISTS (SELECT FROM counted)
    RETURNING jobs.id, jobs.queue, jobs.name, jobs.args, jobs.priority, due.due_at,
        jobs.attempts AS attempt, jobs.max_attempts, jobs.key, jobs.batch, jobs.flow, jobs.claim,
        (SELECT {now}) AS claimed_at
)
SELECT taken.*, CASE WHEN taken.id IS NULL AND cardinality(l.starts) >= l.rate
        THEN l.starts[cardinality(l.starts) - l.rate + 1] + l.per_ms - {clock} END AS room_ms
FROM job_limits AS l LEFT JOIN taken ON true
WHERE l.queue = %(queue)s

-- name: per_key_full
-- claim_limited's {full} for a queue with a limit per key: the keys in work that are
-- full, those with per_key jobs in work (1 if the limit was lifted since the worker read
-- it). Read in the snapshot, with the slot below, it may miss a claim committed since:
-- job_keys_held then refuses the slot taken twice, and the claim takes nothing,
-- as the plain claim does with a key taken twice.
GROUP BY key HAVING count(*) >= (SELECT coalesce(max(per_key), 1) FROM job_limits WHERE queue = %(queue)s)

-- name: per_key_slot
-- claim_limited's {slot} for a queue with a limit per key: the first of the key's slots
-- no job of the key holds (a performer let go holds its slot as its key); none free (the
-- limit was lowered) is 0, which one then holds: refused too.
CASE WHEN jobs.key IS NULL THEN 0 ELSE coalesce((
    SELECT min(slot) FROM generate_series(0, coalesce((SELECT per_key FROM counted), 1) - 1) AS slot
    WHERE slot NOT IN (
        SELECT held.key_slot FROM job_keys_held AS held WHERE held.key = jobs.key
        UNION ALL SELECT g.key_slot FROM job_let_go AS g WHERE g.key = jobs.key)), 0) END

-- name: limited_queues
-- The limited queues among a worker's, read by it once per POLL_INTERVAL: a handful of rows.
SELECT queue, rate, per_ms, concurrency, per_key FROM job_limits WHERE queue = ANY(%(queues)s) ORDER BY queue
