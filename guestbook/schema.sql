-- The guestbook's tables, as numbered steps that db.prepared takes in order, the way the
-- job queue makes its own (jobs/store/schema.py, whose Steps runs these too). A database
-- records each step it took in guestbook_schema, so a process that starts beside a
-- current schema reads that record and changes and locks nothing, however long a
-- request's transaction on accounts is open; a step that is due waits for locks at most
-- jobs.schema.LOCK_TIMEOUT at a time, under the advisory lock db.SCHEMA_LOCK. Add a step
-- to change the tables; never edit one that has shipped, since databases have taken it.

-- name: step 1
-- The tables as they are now. Every statement is idempotent, so the step also brings up
-- to date the tables that versions before the record made (they ran this whole file at
-- every start), through the upgrades at its end.
CREATE TABLE IF NOT EXISTS guestbook_schema (
    version integer PRIMARY KEY,              -- a step this database has taken
    taken_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS accounts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text NOT NULL UNIQUE,               -- lower-cased, as typed otherwise
    password_digest text NOT NULL,            -- Werkzeug's scrypt digest: method, cost, salt and hash
    created_at timestamptz NOT NULL DEFAULT now(),
    confirmed_at timestamptz,                 -- NULL until a confirmation link is used
    failed_signins integer NOT NULL DEFAULT 0,  -- wrong passwords since the last right one
    locked_at timestamptz,                    -- when the last lock began; NULL when unlocked
    reset_sent_at timestamptz,                -- when the last reset letter was queued
    confirmation_sent_at timestamptz NOT NULL DEFAULT now(),  -- when the last confirmation letter was queued
    confirmation_again_at timestamptz,        -- when the last confirmation letter asked for again was queued
    signup_again_sent_at timestamptz          -- when the last "you already have an account" letter was queued
);

CREATE TABLE IF NOT EXISTS entries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    body text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Sign-ins, sign-ups and reset requests per client address (limits.py): one row per
-- client seen in the last CLIENT_WINDOW seconds, forgotten a few at a time after.
CREATE TABLE IF NOT EXISTS client_tries (
    client text PRIMARY KEY,                  -- an IPv4 address, or the IPv6 network holding one (limits.client)
    began timestamptz NOT NULL,               -- when the client's present window began
    tries integer NOT NULL                    -- tries counted in that window
);
CREATE INDEX IF NOT EXISTS client_tries_began ON client_tries (began);

-- One row per signed-in session: the signed cookie only names its row, so deleting the
-- row ends the session wherever a copy of the cookie is (see sessions.py).
CREATE TABLE IF NOT EXISTS sessions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),  -- the sign-in: SESSION_MAX_AGE counts from here
    seen_at timestamptz NOT NULL DEFAULT now()      -- its latest request (to SEEN_EVERY): SESSION_IDLE counts from here
);
CREATE INDEX IF NOT EXISTS sessions_account ON sessions (account_id);

-- Upgrades of tables an earlier version made, in order; each is idempotent.
-- 1. The daily upkeep prunes accounts whose last confirmation link expired unused
--    (upkeep.py): accounts made before confirmation_sent_at existed count from the
--    upgrade, so none is pruned before its last link could have expired.
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS confirmation_sent_at timestamptz NOT NULL DEFAULT now();
-- 2. Confirmation and "you already have an account" letters are throttled per account
--    (accounts.CONFIRM_EVERY, accounts.SIGNUP_AGAIN_EVERY): the moment of the last of each.
ALTER TABLE accounts
    ADD COLUMN IF NOT EXISTS confirmation_again_at timestamptz,
    ADD COLUMN IF NOT EXISTS signup_again_sent_at timestamptz;
-- 3. The name an account signs its entries with (names.py). A table made before it
--    gets the column, empty for the accounts it holds (their entries are signed
--    names.ANONYMOUS); a column with a constant default is added without rewriting rows.
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS display_name text NOT NULL DEFAULT '';

-- name: step 2
-- What one account may write. The window of its entries (entries.py), counted on its
-- own row as client_tries counts a client's tries, NULL until its first entry; and the
-- look-alike key of its name (names.key), unique, so no two names pass for each other.
-- Accounts named before this step get their keys from the app at its next start
-- (names.keys_made: a key is made in Python, not in SQL), by the partial index of the
-- names without one. IF NOT EXISTS: a database whose record of steps was lost takes
-- them again.
ALTER TABLE accounts
    ADD COLUMN IF NOT EXISTS entries_began timestamptz,    -- when the account's present window of entries began
    ADD COLUMN IF NOT EXISTS entries_posted integer NOT NULL DEFAULT 0,  -- entries posted (or tried past the limit) in it
    ADD COLUMN IF NOT EXISTS name_key text;   -- names.key of display_name; NULL for no name
CREATE UNIQUE INDEX IF NOT EXISTS accounts_name_key ON accounts (name_key);
CREATE INDEX IF NOT EXISTS accounts_unkeyed_names ON accounts (id) WHERE name_key IS NULL AND display_name <> '';

-- name: step 3
-- Who may see the job queue's dashboard at /jobs (admins.py): the accounts an operator
-- granted it, one row each, written by `python -m guestbook admins add ADDRESS` and
-- deleted by `admins remove`. No request of the site writes this table, so no sign-up
-- or sign-in can grant it, whatever the address; deleting the account ends the grant.
CREATE TABLE IF NOT EXISTS admins (
    account_id bigint PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    granted_at timestamptz NOT NULL DEFAULT now()
);

-- name: step 4
-- Keys made before names.key dropped the characters that show as nothing
-- (skeletons.DEFAULT_IGNORABLE_RANGES) kept them, so "Alice" with an invisible U+034F
-- held a key of its own, and a plain "Alice" could still be taken. A key is made in
-- Python, not in SQL, so every name gives its key back here and gets it again from
-- names.keys_made at the app's next start, the older account's first as in step 2: of
-- two names that now look alike, the younger keeps its name without a key.
UPDATE accounts SET name_key = NULL WHERE name_key IS NOT NULL;

-- name: step 5
-- What a sign-up's name holds (names.py): a claim on its look-alike key, written by
-- every sign-up that gives a name whether or not its address had an account, so that
-- the next sign-up's answer about the name cannot tell which (the unique key of step 2
-- was written only when the sign-up made an account). A claim holds its key until
-- held_until, names.CLAIM_MAX_AGE after the sign-up that wrote it; the account that
-- sign-up made (account_id) takes the name when it is confirmed, if the claim still
-- holds. A claim whose account goes (pruned, unconfirmed) holds its key to the end all
-- the same. Accounts left unconfirmed before this step keep the keys they hold.
CREATE TABLE IF NOT EXISTS name_claims (
    name_key text PRIMARY KEY,                -- names.key of the name claimed
    display_name text NOT NULL,               -- the name as its sign-up gave it
    account_id bigint REFERENCES accounts (id) ON DELETE SET NULL,  -- the account its sign-up made; NULL for none
    held_until timestamptz NOT NULL           -- when the claim ends
);
CREATE INDEX IF NOT EXISTS name_claims_account ON name_claims (account_id);
CREATE INDEX IF NOT EXISTS name_claims_held_until ON name_claims (held_until);
