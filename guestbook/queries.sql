-- The guestbook's SQL: every statement its views send, each under its name.
-- Durations arrive in seconds, as the named constants of the Python side hold them.

-- name: account_created
-- A taken address makes no row and no error: the caller answers the same either way.
-- The account holds no name yet: its sign-up's claim does (name_claimed), until the
-- account is confirmed (claim_taken_up).
INSERT INTO accounts (email, password_digest)
VALUES (%(email)s, %(digest)s)
ON CONFLICT (email) DO NOTHING
RETURNING id, email, password_digest, confirmed_at, locked_at, false AS locked

-- name: name_taken
-- A key is held by an account (the unique index on name_key) or by a claim that has not
-- ended (name_claims' primary key); a holder that is the account %(account_id)s (NULL
-- at a sign-up, which is no account's) does not count, so an account may keep its own.
SELECT 1 FROM accounts WHERE name_key = %(key)s AND coalesce(id <> %(account_id)s::bigint, true)
UNION ALL
SELECT 1 FROM name_claims
WHERE name_key = %(key)s AND held_until > now() AND coalesce(account_id <> %(account_id)s::bigint, true)

-- name: name_claimed
-- Written by every sign-up that gives a name, with the account it made or NULL for a
-- taken address, so the claim, and the answer of every later sign-up of the name, is
-- the same either way. It takes over a claim that has ended, never one that holds:
-- two sign-ups of a name at once take turns on the key's row, and the second sees the
-- first's claim hold and returns nothing. Nor is a key an account holds claimed.
INSERT INTO name_claims AS c (name_key, display_name, account_id, held_until)
SELECT %(key)s, %(name)s, %(account_id)s, now() + make_interval(secs => %(max_age)s)
WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE name_key = %(key)s)
ON CONFLICT (name_key) DO UPDATE
SET display_name = excluded.display_name, account_id = excluded.account_id, held_until = excluded.held_until
WHERE c.held_until <= now()
RETURNING name_key

-- name: claim_taken_up
-- At its confirmation the account takes the name its sign-up claimed, if the claim still
-- holds (one that ended may be another sign-up's since, and then no longer names this
-- account) and no account took the key meanwhile. The claim goes either way: the
-- account's key holds the name from now on, or an ended claim held nothing. `kept`:
-- false when the account had a claim, and has no name from it.
WITH claim AS (
    DELETE FROM name_claims WHERE account_id = %(id)s
    RETURNING name_key, display_name, held_until > now() AS holds
), named AS (
    UPDATE accounts a SET display_name = claim.display_name, name_key = claim.name_key
    FROM claim
    WHERE a.id = %(id)s AND claim.holds AND NOT EXISTS (SELECT 1 FROM accounts WHERE name_key = claim.name_key)
    RETURNING a.id
)
SELECT EXISTS (SELECT 1 FROM named) OR NOT EXISTS (SELECT 1 FROM claim) AS kept

-- name: claims_released
-- A reset of an account never confirmed: the claim its sign-up wrote (a squatter's,
-- perhaps) no longer speaks for the account, and holds its key to its end as the claim
-- of a taken address's sign-up does, so when the name comes free tells nothing of the reset.
UPDATE name_claims SET account_id = NULL WHERE account_id = %(id)s

-- name: account_renamed
-- The name the account chose (the name page, or the reset of an account never
-- confirmed). name_taken's look at claims is made again here, as the row is written;
-- the unique index on name_key is the last word on the accounts that hold a key.
UPDATE accounts SET display_name = %(name)s, name_key = %(key)s
WHERE id = %(id)s AND NOT EXISTS (
    SELECT 1 FROM name_claims
    WHERE name_key = %(key)s AND held_until > now() AND coalesce(account_id <> %(id)s, true)
)

-- name: account_name
SELECT display_name FROM accounts WHERE id = %(id)s

-- name: claims_pruned
-- The daily upkeep (upkeep.py): the claims that have ended hold nothing, and go.
DELETE FROM name_claims WHERE held_until <= now()

-- name: names_unkeyed
-- Names chosen before accounts had name_key (schema step 2), oldest account first, by
-- the partial index that holds them alone: on a database without any, it reads nothing.
SELECT id, display_name FROM accounts WHERE name_key IS NULL AND display_name <> '' ORDER BY id

-- name: name_keyed
-- Gives the account its name's key unless another account holds that key; a look-alike
-- of a name keyed before it stays without one, and is looked at again next time.
UPDATE accounts SET name_key = %(key)s
WHERE id = %(id)s AND NOT EXISTS (SELECT 1 FROM accounts WHERE name_key = %(key)s)

-- name: account_by_email
-- `locked` says whether a lock is still in force: it ends by itself LOCK_DURATION after it began.
SELECT id, email, password_digest, confirmed_at, locked_at,
    coalesce(locked_at > now() - make_interval(secs => %(lock_duration)s), false) AS locked
FROM accounts
WHERE email = %(email)s

-- name: account_by_id
SELECT id, email, password_digest, confirmed_at, locked_at,
    coalesce(locked_at > now() - make_interval(secs => %(lock_duration)s), false) AS locked
FROM accounts
WHERE id = %(id)s

-- name: account_confirmed
-- Only over the digest the given password was checked against (auth.confirm), not one
-- a reset set while it was hashed. A second confirmation keeps the moment of the first.
UPDATE accounts SET confirmed_at = coalesce(confirmed_at, now())
WHERE id = %(id)s AND password_digest = %(digest)s

-- name: unconfirmed_pruned
-- The daily upkeep (upkeep.py): an account whose last confirmation link expired unused
-- can never be confirmed, so it goes, and its address is free to sign up again. One
-- whose reset letter's link may still live stays: using that link would confirm it.
DELETE FROM accounts
WHERE confirmed_at IS NULL AND confirmation_sent_at < now() - make_interval(secs => %(max_age)s)
    AND (reset_sent_at IS NULL OR reset_sent_at < now() - make_interval(secs => %(reset_max_age)s))

-- name: signin_failed
-- One more wrong password; the count reaching LOCK_AFTER locks the account. The row
-- lock this UPDATE takes serialises concurrent attempts, and each re-reads the row
-- after the one before it commits, so a locked row no longer matches: exactly one
-- attempt sees locked_at come back set, and that one queues the unlock letter.
UPDATE accounts
SET failed_signins = failed_signins + 1,
    locked_at = CASE WHEN failed_signins + 1 >= %(lock_after)s THEN now() END
WHERE id = %(id)s AND locked_at IS NULL
RETURNING locked_at

-- name: signin_succeeded
-- The right password signs in on the row as it is now, after the hash, not as it was
-- read before it: never while a lock is in force, and only if the digest it was checked
-- against is still the account's. Guesses sent at once serialise on the row lock, so a
-- lock that a wrong guess committed while this one was hashed is seen here.
UPDATE accounts SET failed_signins = 0
WHERE id = %(id)s AND password_digest = %(digest)s
    AND (locked_at IS NULL OR locked_at <= now() - make_interval(secs => %(lock_duration)s))

-- name: lock_ended
-- A lock older than LOCK_DURATION has ended by itself: the count starts again.
UPDATE accounts SET locked_at = NULL, failed_signins = 0
WHERE id = %(id)s AND locked_at <= now() - make_interval(secs => %(lock_duration)s)

-- name: account_unlocked
-- Only the lock the link was made for: a link from an earlier lock unlocks nothing.
UPDATE accounts SET locked_at = NULL, failed_signins = 0
WHERE id = %(id)s AND locked_at = %(locked_at)s
RETURNING id

-- name: reset_claimed
-- At most one reset letter per account every RESET_EVERY seconds; the row lock makes
-- two claims at once pass one between them. Sent alone and committed at once
-- (letters.reset_written), so that lock is never held while a letter is sent. A later
-- attempt of the job whose first attempt claimed (%(again)s) passes, and notes when
-- its letter goes: unconfirmed_pruned keeps the account while that letter's link lives.
UPDATE accounts SET reset_sent_at = now()
WHERE id = %(id)s
    AND (%(again)s OR reset_sent_at IS NULL OR reset_sent_at <= now() - make_interval(secs => %(every)s))
RETURNING id

-- name: confirmation_claimed
-- At most one confirmation letter sent again per account every CONFIRM_EVERY seconds,
-- however often the right password of the unconfirmed account is given; the row lock
-- makes two sign-ins at once queue one letter between them.
-- The letter's link lives CONFIRM_MAX_AGE from now, and so does the account (unconfirmed_pruned).
UPDATE accounts SET confirmation_again_at = now(), confirmation_sent_at = now()
WHERE id = %(id)s AND confirmed_at IS NULL
    AND (confirmation_again_at IS NULL OR confirmation_again_at <= now() - make_interval(secs => %(every)s))
RETURNING id

-- name: signup_again_claimed
-- At most one "you already have an account" letter per account every SIGNUP_AGAIN_EVERY
-- seconds, however often its address is signed up again.
UPDATE accounts SET signup_again_sent_at = now()
WHERE email = %(email)s
    AND (signup_again_sent_at IS NULL OR signup_again_sent_at <= now() - make_interval(secs => %(every)s))
RETURNING id

-- name: password_reset
-- Only over the digest the link was made for, so of two uses of one link at once,
-- one sets the password and the other changes nothing. A reset ends a lock, and
-- proves the address as a confirmation would.
UPDATE accounts
SET password_digest = %(digest)s, locked_at = NULL, failed_signins = 0,
    confirmed_at = coalesce(confirmed_at, now())
WHERE id = %(id)s AND password_digest = %(old_digest)s
RETURNING id

-- name: client_tried
-- One more try by the client, counted in its window of CLIENT_WINDOW seconds, or the
-- first of a new window once the last has ended. One statement: tries from one client
-- at once queue on the row's lock and each counts, none lost. RETURNING sees the row
-- as written: the tries so far, and the whole seconds until the window ends.
INSERT INTO client_tries AS t (client, began, tries) VALUES (%(client)s, now(), 1)
ON CONFLICT (client) DO UPDATE SET
    began = CASE WHEN t.began <= now() - make_interval(secs => %(window)s) THEN now() ELSE t.began END,
    tries = CASE WHEN t.began <= now() - make_interval(secs => %(window)s) THEN 1 ELSE t.tries + 1 END
RETURNING tries, ceil(extract(epoch FROM t.began + make_interval(secs => %(window)s) - now()))::integer AS wait

-- name: client_tries_forgotten
-- Forgets up to FORGET_BATCH clients whose window has ended, oldest first (by the index
-- on began). SKIP LOCKED passes over rows a try is counting, so this never waits on one
-- and two requests forgetting at once never deadlock.
DELETE FROM client_tries WHERE client IN (
    SELECT client FROM client_tries
    WHERE began <= now() - make_interval(secs => %(window)s)
    ORDER BY began LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
)

-- name: entries_page
-- Newest first, each with the name of the account that wrote it, from the entry before
-- the id `before` on (entries.NEWEST for the first page): a keyset, so the primary
-- key's index finds where a page begins and every page reads `limit` rows, however
-- deep, where an OFFSET would read and throw away every row before it. One row more
-- than a page is asked for, to tell whether an older page exists.
SELECT e.id, e.body, e.created_at AT TIME ZONE 'UTC' AS created_utc, a.display_name
FROM entries e JOIN accounts a ON a.id = e.account_id
WHERE e.id < %(before)s
ORDER BY e.id DESC
LIMIT %(limit)s

-- name: entry_counted
-- One more entry by the account, counted in its window of ENTRY_WINDOW seconds, or the
-- first of a new window once the last has ended. The row lock serialises an account's
-- posts sent at once, so each is counted and none slips past the limit; RETURNING sees
-- the row as written: the entries so far, and the whole seconds until the window ends.
UPDATE accounts AS a SET
    entries_began = CASE WHEN a.entries_began IS NULL OR a.entries_began <= now() - make_interval(secs => %(window)s)
                         THEN now() ELSE a.entries_began END,
    entries_posted = CASE WHEN a.entries_began IS NULL OR a.entries_began <= now() - make_interval(secs => %(window)s)
                          THEN 1 ELSE a.entries_posted + 1 END
WHERE id = %(account_id)s
RETURNING entries_posted, ceil(extract(epoch FROM entries_began + make_interval(secs => %(window)s) - now()))::integer AS wait

-- name: entry_created
INSERT INTO entries (account_id, body) VALUES (%(account_id)s, %(body)s)

-- name: session_started
-- A new session for the account. The account's sessions that have ended by themselves
-- go at the same time, and so do its live ones past the newest `kept` (SESSIONS_MAX
-- less the new one), so no account holds more than SESSIONS_MAX rows however often
-- it signs in. Both deletes read the table as it was before the statement.
WITH dead AS (
    DELETE FROM sessions
    WHERE account_id = %(account_id)s
        AND (created_at <= now() - make_interval(secs => %(max_age)s)
             OR seen_at <= now() - make_interval(secs => %(idle)s))
), oldest AS (
    DELETE FROM sessions WHERE id IN (
        SELECT id FROM sessions
        WHERE account_id = %(account_id)s
            AND created_at > now() - make_interval(secs => %(max_age)s)
            AND seen_at > now() - make_interval(secs => %(idle)s)
        ORDER BY id DESC
        OFFSET %(kept)s
    )
)
INSERT INTO sessions (account_id) VALUES (%(account_id)s)
RETURNING id

-- name: session_account
-- The account of a live session: one whose row exists (sign-out, sign-out everywhere
-- and a reset delete it), less than SESSION_MAX_AGE after its sign-in and SESSION_IDLE
-- after its latest request. `stale` asks for seen_at to be moved on.
SELECT a.id, a.email, a.password_digest, a.confirmed_at, a.locked_at,
    coalesce(a.locked_at > now() - make_interval(secs => %(lock_duration)s), false) AS locked,
    s.seen_at <= now() - make_interval(secs => %(seen_every)s) AS stale
FROM sessions s JOIN accounts a ON a.id = s.account_id
WHERE s.id = %(id)s AND s.account_id = %(account_id)s
    AND s.created_at > now() - make_interval(secs => %(max_age)s)
    AND s.seen_at > now() - make_interval(secs => %(idle)s)

-- name: session_seen
UPDATE sessions SET seen_at = now() WHERE id = %(id)s

-- name: session_ended
DELETE FROM sessions WHERE id = %(id)s

-- name: sessions_ended
-- Every session of the account, wherever its cookies are: sign out everywhere, and a reset.
DELETE FROM sessions WHERE account_id = %(account_id)s

-- name: sessions_pruned
-- The daily upkeep (upkeep.py): every session that has ended by itself, whichever
-- account it was of, so the table holds little more than the live ones.
DELETE FROM sessions
WHERE created_at <= now() - make_interval(secs => %(max_age)s) OR seen_at <= now() - make_interval(secs => %(idle)s)

-- name: admin_granted
-- An operator's grant (admins.py): only to a confirmed account, whose address is proved.
-- A second grant changes nothing and keeps the moment of the first.
INSERT INTO admins (account_id)
SELECT id FROM accounts WHERE email = %(email)s AND confirmed_at IS NOT NULL
ON CONFLICT (account_id) DO NOTHING
RETURNING account_id

-- name: admin_revoked
DELETE FROM admins USING accounts
WHERE admins.account_id = accounts.id AND accounts.email = %(email)s
RETURNING admins.account_id

-- name: admins_listed
SELECT a.email, d.granted_at FROM admins d JOIN accounts a ON a.id = d.account_id ORDER BY a.email

-- name: admin_held
-- Asked on every request to /jobs and for every page whose header may link there.
SELECT 1 FROM admins WHERE account_id = %(account_id)s

-- name: letters_waiting
-- The letters of one priority the mail queue holds and has yet to send: due, in work,
-- or waiting to be tried again, but not those failed for good (attempts spent) or sent
-- (a sent letter's job is deleted). Counted up to %(at_most)s + 1 only: the bound needs
-- no more, and a backlog's whole length is not read again for every sign-up. The rows
-- are the jobs package's (jobs/store/schema.sql); jobs_ready leads with queue and priority.
SELECT count(*) FROM (
    SELECT 1 FROM jobs
    WHERE queue = %(queue)s AND priority = %(priority)s AND attempts < max_attempts
    LIMIT %(at_most)s + 1
) AS waiting

-- name: letters_awaited_by
-- The letters of one priority that one client's requests asked for and the mail queue
-- has yet to send, counted as letters_waiting counts them, up to %(at_most)s only. The
-- client is the `write` job's argument (mailer.reset_asked); the rows read are the
-- priority's alone (jobs_ready leads with queue and priority): the letters somebody
-- waits for, at most AWAITED_PER_CLIENT of them a client.
SELECT count(*) FROM (
    SELECT 1 FROM jobs
    WHERE queue = %(queue)s AND priority = %(priority)s AND attempts < max_attempts
        AND name = 'write' AND args->>'client' = %(client)s
    LIMIT %(at_most)s
) AS waiting
