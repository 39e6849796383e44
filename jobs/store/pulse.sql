-- The SQL of the queue's pulse (pulse.py): the per-minute rollup the workers add their
-- counts to, and the dashboard reads. None of it reads the jobs table.

-- name: pulse_added
-- A worker adds what it counted since its last flush, one row per minute and queue,
-- in one statement. The rows come as a JSON array (a 2-D array of waits would not go
-- through unnest). The update adds to what other workers wrote, so any number of them
-- add up; the waits add element by element. Rows are written in key order, so two
-- workers flushing the same minutes take their row locks in the same order and never
-- deadlock; each waits at most the listener's lock bound (CHORE_LOCK_WAIT), then keeps
-- its counts for the next flush.
INSERT INTO job_pulse AS t (minute, queue, queued, finished, retried, failed, waits)
SELECT minute, queue, queued, finished, retried, failed, waits
FROM jsonb_to_recordset(%(rows)s::jsonb)
    AS r (minute bigint, queue text, queued bigint, finished bigint, retried bigint, failed bigint, waits bigint[])
ORDER BY minute, queue
ON CONFLICT (minute, queue) DO UPDATE
SET queued = t.queued + excluded.queued, finished = t.finished + excluded.finished,
    retried = t.retried + excluded.retried, failed = t.failed + excluded.failed,
    waits = ARRAY(
        SELECT coalesce(a, 0) + coalesce(b, 0)
        FROM unnest(t.waits, excluded.waits) WITH ORDINALITY AS w (a, b, n)
        ORDER BY n
    )

-- name: pulse_pruned
-- The minutes older than PULSE_KEPT go, read from the front of the primary key; the
-- reaper sends it on every worker, and a row locked by a flush is waited for at most
-- CHORE_LOCK_WAIT (a later pass takes it).
DELETE FROM job_pulse WHERE minute < {now} - %(kept)s

-- name: pulse_read
-- The minutes since %(since)s (ms) of every queue, oldest first: the chart's rows.
-- At most queues x the minutes of a day, by the primary key's range.
SELECT minute, queue, queued, finished, retried, failed, waits
FROM job_pulse
WHERE minute >= %(since)s
ORDER BY queue, minute
