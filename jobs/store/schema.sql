-- The tables of the job queue, as numbered steps (schema.py runs them in order).
-- A database records each step it has taken in job_schema, so a process that starts
-- beside a current schema reads that record and changes nothing. Add a step to change
-- the schema; never edit one that has shipped, since databases have already taken it.
-- Every step is written so that it also succeeds on tables an older copy of this
-- package made before it kept a version (IF NOT EXISTS, IF EXISTS).

-- name: recorded
-- Whether this database keeps the record (the table named by the parameter) at all,
-- read from the catalogue under the statement's own snapshot. Not with to_regclass: a
-- session caches its answer, and one that waited for another process's first step
-- would go on not seeing the new table.
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_class
    WHERE relname = %(record)s
        AND relnamespace IN (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ANY (current_schemas(false)))
)

-- name: version
-- The last step this database has taken. A plain read of a small table of its own,
-- which no statement of the queue ever locks against. {record} is the table's name
-- (job_schema for these steps; schema.Steps keeps other tables' records alike).
SELECT coalesce(max(version), 0) FROM {record}

-- name: lock_timeout
-- How long each statement of the step may wait for a lock before it gives up, for the
-- rest of this transaction only (see LOCK_TIMEOUT in schema.py).
SELECT set_config('lock_timeout', %(timeout)s, true)

-- name: serialised
-- One upgrader at a time (see UPGRADE_LOCK in schema.py), held to the end of the step.
SELECT pg_advisory_xact_lock(%(key)s)

-- name: record
INSERT INTO {record} (version) VALUES (%(version)s)

-- name: step 1
-- The tables and the record of steps. A database whose tables an older copy made keeps
-- them as they are here; step 2 brings them up to date.
CREATE TABLE IF NOT EXISTS job_schema (
    version integer PRIMARY KEY,           -- a step this database has taken
    taken_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- in the order jobs were queued
    queue text NOT NULL,             -- the queue it waits on
    name text NOT NULL,              -- which performer runs it
    args jsonb NOT NULL,             -- its arguments
    priority smallint NOT NULL DEFAULT 0,  -- among due jobs, lower runs first
    run_at bigint NOT NULL,          -- ms: when it may run next, or when its lease runs out
    attempts integer NOT NULL DEFAULT 0,   -- attempts begun, counted at the claim
    -- At attempts >= max_attempts it failed for good. Every insert of this package
    -- writes it from ATTEMPTS (claims.py); the default serves only writers that leave
    -- it out, such as a copy of the package from before it kept a schema version that
    -- still runs beside this one during a rolling deploy.
    max_attempts integer NOT NULL DEFAULT 5,
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

-- name: step 2
-- Jobs for later came after the first tables: a table made before them lacks the column.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS scheduled boolean NOT NULL DEFAULT false;

-- name: step 3
-- The indexes. Two replace indexes of older copies, dropped first: jobs_due, the claim's
-- index before scheduled jobs were left out of it, and jobs_unique, which stopped
-- counting a job in its last attempt as in work.
--
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
-- For cancelling a batch: its jobs, found without reading the others.
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs (batch) WHERE batch IS NOT NULL;
-- For pruning finished batches.
CREATE INDEX IF NOT EXISTS job_batches_finished ON job_batches (finished_at)
    WHERE finished_at IS NOT NULL;

-- name: step 4
-- Storage settings for a table that churns: every job is inserted, updated at its claim
-- (and at each heartbeat and failure), then deleted, so the table's dead rows soon
-- outnumber its live ones. ALTER TABLE SET takes a lock that queueing and claiming do
-- not conflict with (SHARE UPDATE EXCLUSIVE).
--   autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000: vacuum
--     after 1,000 dead rows whatever the table's size. PostgreSQL's default waits for
--     a fifth of the table to be dead (plus 50): beside a shelf of a million failed
--     jobs that is 200,000 dead rows, whose entries every claim then steps over.
--   fillfactor = 50: half of each page is left free when rows are inserted, room for
--     one new version of each row. A claim changes run_at, which the claim's index
--     holds, so it is never a HOT update; but with room on the page the new version is
--     written beside the old one instead of on another page (python -m
--     tests.benchmarks.fillfactor shows it). The price: pages of jobs that stay (the
--     failed shelf) are kept half full.
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, fillfactor = 50);

-- name: step 5
-- Periodic jobs (schedules.py): one row per schedule a worker holds, with the tick it
-- last fired, which every worker's firing reads and moves on in the database.
CREATE TABLE IF NOT EXISTS job_schedules (
    key text PRIMARY KEY,              -- the schedule's key in the code
    fingerprint text NOT NULL,         -- a digest of its definition as last seen
    definition text NOT NULL,          -- that definition as people read it: "17 3 * * * (UTC)"
    last_tick timestamptz,             -- the tick last fired (or skipped); NULL until the first
    created_at timestamptz NOT NULL DEFAULT now(),  -- first seen: no tick before it fires
    seen_at timestamptz NOT NULL DEFAULT now()      -- when a worker holding it last said so
);

-- name: step 6
-- What the shelf (shelf.py) and an operator (control.py) need beyond the table itself:
-- the shelf in id order, for its pages newest first and for emptying it in batches,
-- and by queue, for one queue's pages and the counts of status; the scheduled jobs by
-- queue, for status (jobs_scheduled is in run_at order alone, the promotion's order);
-- the mark of a job in work that was asked to stop (cancelled_at, NULL for every other
-- job); and the paused queues, whose jobs workers claim none of until resumed.
CREATE INDEX IF NOT EXISTS jobs_shelf ON jobs (id) WHERE attempts >= max_attempts AND claim IS NULL;
CREATE INDEX IF NOT EXISTS jobs_shelf_queue ON jobs (queue, id) WHERE attempts >= max_attempts AND claim IS NULL;
CREATE INDEX IF NOT EXISTS jobs_scheduled_queue ON jobs (queue, run_at) WHERE scheduled;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS cancelled_at bigint;
CREATE TABLE IF NOT EXISTS job_paused_queues (
    queue text PRIMARY KEY,
    paused_at bigint NOT NULL  -- ms since the epoch
);

-- name: step 7
-- Liveness apart from the jobs' rows (control.py): each worker records itself in
-- job_workers when it starts and its heartbeat moves beat_at on, one small row per
-- worker, so keeping a job never writes the job's row and never waits on its lock.
-- A claim records in jobs.worker which worker holds the job; while that worker beats,
-- the row's run_at is HELD (queries.sql) and no lease runs out. A worker silent for
-- longer than its lease allows is taken for gone by another's reaper, which lets its
-- jobs' leases run out then. A clean stop marks the row; rows gone over an hour stay
-- for `python -m jobs workers` and the dashboard, then the reaper deletes them.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS worker bigint;
CREATE TABLE IF NOT EXISTS job_workers (
    id bigint PRIMARY KEY,             -- chosen at random by the worker when it starts
    host text NOT NULL,                -- the machine it runs on
    pid integer NOT NULL,              -- its process there
    queues text[] NOT NULL,            -- the queues it works
    threads integer NOT NULL,          -- how many jobs it runs at once
    lease bigint NOT NULL,             -- ms: its lease, by which its silence is judged
    version integer NOT NULL,          -- the schema version its code needs (schema.VERSION)
    started_at bigint NOT NULL,        -- ms since the epoch, on the database's clock
    beat_at bigint NOT NULL,           -- ms: its last heartbeat
    ended_at bigint,                   -- ms: when it stopped, or was taken for gone; NULL while it works
    ending text                        -- 'stopped' (cleanly) or 'silent' (taken for gone); NULL while it works
);

-- name: step 8
-- The arguments of a job that are secrets (a letter's body, with its live links; a
-- token; a password), named by the caller of `later(..., secret=[...])`: the
-- dashboard shows them hidden, and a failure's reason and traceback are written with
-- their values taken out (redaction.py). NULL, as every job had before, hides nothing.
-- A column with no default is added without rewriting a row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS secret text[];

-- name: step 9
-- Which run of a job each of its reasons belongs to: a retry from the shelf (shelf.py)
-- counts the job's attempts from 0 again and keeps its reasons, and appends here how
-- many reasons it held then, so `python -m jobs failed --full` and the dashboard can
-- say "run 2, reason 1" rather than list four reasons after two attempts. NULL: never
-- retried. A column with no default is added without rewriting a row.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS retries integer[];

-- name: step 10
-- The limits of queues (limits.py): a rate (at most `rate` claims of the queue's jobs in
-- any window of `per_ms`) and a concurrency (at most `concurrency` of its jobs in work
-- at once), each NULL when not set. A limited queue's claim locks its row, so those
-- claims are taken one after another across every worker, keeps in `starts` the
-- moments of the claims of the last window, oldest first, and counts in `claimed` the
-- jobs it took (claim_limited in queries.sql says why). A new table: nothing else
-- is rewritten, and a queue with no row claims as it always has.
CREATE TABLE IF NOT EXISTS job_limits (
    queue text PRIMARY KEY,
    rate integer CHECK (rate > 0),                -- jobs a window may start; NULL: no rate
    per_ms bigint CHECK (per_ms > 0),             -- the window, ms
    concurrency integer CHECK (concurrency > 0),  -- jobs in work at once at the most; NULL: any number
    starts bigint[] NOT NULL DEFAULT '{}',        -- ms since the epoch: the claims of the last window
    claimed bigint NOT NULL DEFAULT 0,            -- jobs claimed under the limit, ever: how claims see each other
    changed_at bigint NOT NULL,                   -- ms: when the limit was last set
    CHECK ((rate IS NULL) = (per_ms IS NULL)),
    CHECK (rate IS NOT NULL OR concurrency IS NOT NULL)
);

-- name: step 11
-- When each job was queued, and how long each failed attempt ran, for the dashboard's
-- page of a job: `later` and `later_many` write queued_at (ms since the epoch) in the
-- insert itself, and the fail statement writes the attempt's milliseconds in ran, keyed
-- by the index of the reason it appends at once ({"0": 1520, "1": 30}), so a reason
-- another statement appends (a cancel, the reaper) simply has no entry. Both NULL in
-- rows written before this step, or by an older copy of the package. Columns with no
-- default are added without rewriting a row.
-- The scheduled jobs by queue gain the id as their last column, and replace the index of
-- step 6 without it: the dashboard's list of scheduled jobs pages by (run_at, id), and
-- without the id every page sorted all the jobs due at one moment (those one later_many
-- queues with one `at`). One index for one, 8 bytes wider: what
-- `later`, the promotion and a failure's retry maintain is unchanged. Building it reads
-- the table, as step 6 did (see Deploying in the manual).
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS queued_at bigint;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS ran jsonb;
CREATE INDEX IF NOT EXISTS jobs_scheduled_by_queue ON jobs (queue, run_at, id) WHERE scheduled;
DROP INDEX IF EXISTS jobs_scheduled_queue;

-- name: step 12
-- The queue's pulse (pulse.py): one row per minute and queue, which every worker adds
-- its own counts to every PULSE_EVERY seconds, so the dashboard draws the last hour
-- and day without reading the jobs table. `waits` counts the claims of that minute by
-- how long their job had been due, one element per bucket of WAIT_BUCKETS and a last
-- one past them. The key leads with the minute: the chart reads a range of minutes,
-- and the reaper deletes the minutes older than PULSE_KEPT from the front.
-- A new table: nothing is rewritten.
CREATE TABLE IF NOT EXISTS job_pulse (
    minute bigint NOT NULL,            -- ms since the epoch at the minute's start, on the database's clock
    queue text NOT NULL,
    queued bigint NOT NULL DEFAULT 0,    -- first attempts claimed
    finished bigint NOT NULL DEFAULT 0,  -- successes settled
    retried bigint NOT NULL DEFAULT 0,   -- failed attempts to be tried again
    failed bigint NOT NULL DEFAULT 0,    -- failures for good
    waits bigint[] NOT NULL,             -- claims by wait from due, per bucket of WAIT_BUCKETS
    PRIMARY KEY (minute, queue)
);

-- name: step 13
-- A limit per key (limits.py): `per_key` lets that many jobs of one concurrency key be
-- in work at once in a limited queue, where the plain claim lets one. Each job under a
-- claim holds one of its key's slots, numbered from 0 in `key_slot`: the plain claim
-- always takes slot 0, a limited queue's claim the first of its per_key slots that no
-- job of the key holds. The unique index on the key of claimed rows becomes one on the
-- key and its slot, so it still refuses what two claims side by side could both take:
-- a second job of a key in one slot. A per-key limit alone is a limit, so the check
-- that a row limits something names it too.
-- key_slot's default is a constant: the column is added without rewriting a row.
-- Building the new index reads the table, as steps 6 and 11 did (see Deploying in the
-- manual); the old index is dropped once the new one guards the claims.
ALTER TABLE job_limits ADD COLUMN IF NOT EXISTS per_key integer CHECK (per_key > 0);
ALTER TABLE job_limits DROP CONSTRAINT IF EXISTS job_limits_check1;
ALTER TABLE job_limits DROP CONSTRAINT IF EXISTS job_limits_limits_something;
ALTER TABLE job_limits ADD CONSTRAINT job_limits_limits_something
    CHECK (rate IS NOT NULL OR concurrency IS NOT NULL OR per_key IS NOT NULL);
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS key_slot smallint NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX IF NOT EXISTS jobs_key_slot_in_work ON jobs (key, key_slot)
    WHERE key IS NOT NULL AND claim IS NOT NULL;
DROP INDEX IF EXISTS jobs_key_in_work;

-- name: step 14
-- Performers still running whose jobs were settled without them (holdings.py): a job let
-- go for its timeout or at the end of a stop's grace, or cancelled while it runs, has its
-- claim cleared while its thread's performer goes on (Python cannot stop a thread), so
-- its worker records it here first, and deletes the row once the performer has returned.
-- The claims count these rows in work, against the queue's concurrency and the job's key
-- and slot, for as long as their worker works (ended_at IS NULL): a worker gone took its
-- threads with it, and the reaper deletes what it left. Few rows at any time, read whole.
-- A new table: nothing else is rewritten, and copies from before this step, which do
-- not know it, claim as they always have.
CREATE TABLE IF NOT EXISTS job_let_go (
    job bigint NOT NULL,               -- the job's id (its row may be gone by now)
    claim bigint NOT NULL,             -- the claim its performer ran under
    worker bigint NOT NULL,            -- the worker (job_workers) whose thread runs it
    queue text NOT NULL,
    key text,                          -- its concurrency key, and the key's slot it held
    key_slot smallint NOT NULL,
    PRIMARY KEY (job, claim)
);

-- name: step 15
-- The two promises that rest on a unique index of jobs move to small tables of their own,
-- kept by row triggers on jobs: at most one job waiting or in work per unique key
-- (job_unique_keys) and at most one job under a claim per concurrency key and slot
-- (job_keys_held). A table split into partitions, which the next steps of the table's
-- design need (see "The table" in the manual), cannot hold a unique index over all of
-- them; a table of its own can, whatever holds the jobs. The triggers decide from the
-- row alone, as the index predicates did, so every statement that writes jobs, an older
-- copy's too, keeps the tables exact: a row enters when it comes to count (queued, or
-- brought back from the shelf; claimed) and leaves when it stops (deleted, failed for
-- good or cancelled; its claim cleared). Entering a taken key fails with unique_violation,
-- as the indexes made it, but for an insert, which a key taken skips instead (nothing is
-- queued and RETURNING gives no row, as ON CONFLICT DO NOTHING did). WHEN clauses keep
-- rows with neither key from ever calling a function. A TRUNCATE of jobs empties both.
-- The indexes they replace stay for copies of the package still running from before
-- this step: an older `later` names jobs_unique_key in its ON CONFLICT.
-- The jobs table is locked first (SHARE ROW EXCLUSIVE: reads go on, writes wait for the
-- step), so the rows copied in below and the triggers see the same table.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE IF NOT EXISTS job_unique_keys (
    unique_key text PRIMARY KEY,
    job bigint NOT NULL                  -- the job that holds it
);
CREATE TABLE IF NOT EXISTS job_keys_held (
    key text NOT NULL,
    key_slot smallint NOT NULL,
    job bigint NOT NULL,                 -- the job whose claim holds it
    PRIMARY KEY (key, key_slot)
);
CREATE OR REPLACE FUNCTION job_unique_keys_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.unique_key IS NOT NULL AND (OLD.attempts < OLD.max_attempts OR OLD.claim IS NOT NULL) THEN
        DELETE FROM job_unique_keys WHERE unique_key = OLD.unique_key AND job = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.unique_key IS NOT NULL AND (NEW.attempts < NEW.max_attempts OR NEW.claim IS NOT NULL) THEN
        IF TG_OP = 'UPDATE' THEN
            INSERT INTO job_unique_keys (unique_key, job) VALUES (NEW.unique_key, NEW.id);
        ELSE
            INSERT INTO job_unique_keys (unique_key, job) VALUES (NEW.unique_key, NEW.id) ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
CREATE OR REPLACE FUNCTION job_keys_held_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.key IS NOT NULL AND OLD.claim IS NOT NULL THEN
        DELETE FROM job_keys_held WHERE key = OLD.key AND key_slot = OLD.key_slot AND job = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.key IS NOT NULL AND NEW.claim IS NOT NULL THEN
        INSERT INTO job_keys_held (key, key_slot, job) VALUES (NEW.key, NEW.key_slot, NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION job_keys_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_unique_keys;
    DELETE FROM job_keys_held;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER job_unique_key_queued BEFORE INSERT ON jobs FOR EACH ROW
    WHEN (NEW.unique_key IS NOT NULL AND (NEW.attempts < NEW.max_attempts OR NEW.claim IS NOT NULL))
    EXECUTE FUNCTION job_unique_keys_kept();
CREATE OR REPLACE TRIGGER job_unique_key_changed AFTER UPDATE ON jobs FOR EACH ROW
    WHEN ((OLD.unique_key IS NOT NULL OR NEW.unique_key IS NOT NULL)
        AND ROW(OLD.unique_key, OLD.attempts < OLD.max_attempts OR OLD.claim IS NOT NULL)
            IS DISTINCT FROM ROW(NEW.unique_key, NEW.attempts < NEW.max_attempts OR NEW.claim IS NOT NULL))
    EXECUTE FUNCTION job_unique_keys_kept();
CREATE OR REPLACE TRIGGER job_unique_key_deleted AFTER DELETE ON jobs FOR EACH ROW
    WHEN (OLD.unique_key IS NOT NULL)
    EXECUTE FUNCTION job_unique_keys_kept();
CREATE OR REPLACE TRIGGER job_key_claimed AFTER INSERT ON jobs FOR EACH ROW
    WHEN (NEW.key IS NOT NULL AND NEW.claim IS NOT NULL)
    EXECUTE FUNCTION job_keys_held_kept();
CREATE OR REPLACE TRIGGER job_key_changed AFTER UPDATE ON jobs FOR EACH ROW
    WHEN (((OLD.key IS NOT NULL AND OLD.claim IS NOT NULL) OR (NEW.key IS NOT NULL AND NEW.claim IS NOT NULL))
        AND ROW(OLD.key, OLD.key_slot, OLD.claim IS NOT NULL) IS DISTINCT FROM ROW(NEW.key, NEW.key_slot, NEW.claim IS NOT NULL))
    EXECUTE FUNCTION job_keys_held_kept();
CREATE OR REPLACE TRIGGER job_key_deleted AFTER DELETE ON jobs FOR EACH ROW
    WHEN (OLD.key IS NOT NULL AND OLD.claim IS NOT NULL)
    EXECUTE FUNCTION job_keys_held_kept();
CREATE OR REPLACE TRIGGER job_keys_truncated AFTER TRUNCATE ON jobs FOR EACH STATEMENT
    EXECUTE FUNCTION job_keys_emptied();
INSERT INTO job_unique_keys (unique_key, job)
    SELECT DISTINCT ON (unique_key) unique_key, id FROM jobs
    WHERE unique_key IS NOT NULL AND (attempts < max_attempts OR claim IS NOT NULL)
    ORDER BY unique_key, id
    ON CONFLICT DO NOTHING;
INSERT INTO job_keys_held (key, key_slot, job)
    SELECT DISTINCT ON (key, key_slot) key, key_slot, id FROM jobs
    WHERE key IS NOT NULL AND claim IS NOT NULL
    ORDER BY key, key_slot, id
    ON CONFLICT DO NOTHING;
