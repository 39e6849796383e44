"""The lockout under guesses sent at once, against a real `guestbook serve`: a lock is never outrun.

A sign-in reads the account, then spends ~90 ms hashing; guesses sent at once can lock
the account meanwhile. Here the guess that locks it holds the row while the right
password is hashed and waits on the row, with wrong guesses piling up behind: the right
password must be refused once the lock commits, so the burst locks the account and
signs nobody in.
"""

from concurrent.futures import ThreadPoolExecutor

import pytest

from guestbook import accounts, passwords
from guestbook.db import queries

from .conftest import PASSWORD
from .served import WAIT, Served, environment, eventually

GUESSES = 24  # guesses sent at once: the right one first, then the wrong ones
WRONG = "not the right password"


@pytest.fixture
def served(database_url, db, tmp_path):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    # the rows the process's start made, and the tries of the tests before
    db.execute("TRUNCATE accounts, entries, sessions, client_tries RESTART IDENTITY CASCADE")
    yield served
    assert served.stopped() == 0


def waiting_on_a_lock(db) -> int:
    """How many of the database's sessions are waiting for a lock another holds."""
    return db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()[0]


@pytest.mark.slow
def test_the_right_password_hashed_while_a_lock_lands_is_refused(served, db, connect):
    db.execute(
        "INSERT INTO accounts (email, password_digest, confirmed_at, failed_signins) VALUES (%s, %s, now(), %s)",
        ["ada@example.com", passwords.digest(PASSWORD), accounts.LOCK_AFTER - 1],
    )
    visitors = [served.visitor() for _ in range(GUESSES)]
    for visitor in visitors:
        visitor.csrf_token()  # each has its session before the race

    def guess(visitor, password):
        return visitor.request("/signin", {"email": "ada@example.com", "password": password})[0]

    with ThreadPoolExecutor(GUESSES) as pool, connect() as tenth:
        # The tenth wrong guess takes the row first and holds it, uncommitted.
        tenth.execute(queries["signin_failed"], {"id": 1, "lock_after": accounts.LOCK_AFTER})
        right = pool.submit(guess, visitors[0], PASSWORD)
        assert eventually(lambda: waiting_on_a_lock(db) == 1, WAIT), "the right guess never reached the row"
        wrong = [pool.submit(guess, visitor, WRONG) for visitor in visitors[1:]]
        tenth.commit()
        answers = [right.result(WAIT), *(future.result(WAIT) for future in wrong)]

    assert answers == [401] * GUESSES
    assert db.execute("SELECT locked_at IS NOT NULL, failed_signins FROM accounts").fetchone() == (
        True,
        accounts.LOCK_AFTER,
    )
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
