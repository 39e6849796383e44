-- The SQL of schedules (schedules.py): one row per schedule the code holds, and the
-- conditional update that makes each of its ticks queue exactly one job.
-- Moments here are timestamptz read from the database's own clock (now()), so
-- workers whose clocks disagree still agree on which tick is due.

-- name: schedules_read
-- Every poll, each worker reads the rows of the schedules it holds, and the database's
-- clock; nothing is written unless a tick is due. A key with no row yet comes back
-- with NULLs, so the caller knows to record it.
SELECT held.key, s.fingerprint, s.last_tick, s.created_at, s.seen_at, now() AS now
FROM unnest(%(keys)s::text[]) AS held (key)
LEFT JOIN job_schedules AS s USING (key)

-- name: schedule_seen
-- A worker records a schedule it holds: new, changed, or not noted for SEEN_EVERY.
-- A new row begins at now(): ticks before a schedule existed are not missed ticks.
-- A changed definition keeps last_tick, so the new one carries on after the old one's
-- last tick and never fires a moment that was already fired.
INSERT INTO job_schedules (key, fingerprint, definition)
VALUES (%(key)s, %(fingerprint)s, %(definition)s)
ON CONFLICT (key) DO UPDATE
SET fingerprint = excluded.fingerprint, definition = excluded.definition, seen_at = now()
RETURNING key, fingerprint, last_tick, created_at, seen_at, now() AS now

-- name: schedule_fired
-- The decision, in the transaction that queues the tick's jobs: last_tick moves on to
-- the tick only if it is still before the first tick being queued. Two workers that
-- both saw the tick due both run this; the second waits on the first's row lock, then
-- reads the row again (READ COMMITTED), finds last_tick already there, and updates
-- nothing, so it queues nothing. The tick's moment is the unit of uniqueness: ticks
-- only ever move forward, so a worker holding an older or newer version of the
-- schedule (mid-deploy) never fires a moment at or before one already fired.
UPDATE job_schedules SET last_tick = %(last)s
WHERE key = %(key)s AND (last_tick IS NULL OR last_tick < %(first)s) AND %(last)s <= now()
RETURNING key

-- name: schedules_recorded
-- For `python -m jobs schedules`: every schedule a worker ever recorded.
SELECT key, definition, fingerprint, last_tick, created_at, seen_at, now() AS now
FROM job_schedules
ORDER BY key

-- name: database_now
SELECT now() AS now
