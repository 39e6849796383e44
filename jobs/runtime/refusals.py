"""What a worker says when the database will not let it work: a lost connection, or a refusal.

A lost connection mends by reconnecting, and is logged as a warning each time. So does
a connection that reached a read-only server (a standby, after a failover or through a
stale DNS name): only a new connection finds the primary. A statement the server
refused (permission denied, a missing table or column) does not mend by itself: it is
logged at ERROR with its SQLSTATE once, then counted.
"""

import logging
import threading
import time
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ..store import claims, control

# SQLSTATEs that mean the connection is gone, not that a statement was refused: the
# class "connection exception", and the server shutting down or not yet accepting.
LOST_CLASS = "08"
LOST_STATES = {"57P01", "57P02", "57P03"}  # admin_shutdown, crash_shutdown, cannot_connect_now
READ_ONLY = "25006"  # read_only_sql_transaction: the server is a standby, or refuses writes for now
COMPLAINT_REPEAT = 300.0  # seconds a refusal is counted in silence before it is logged again, with its count
IDLE = TransactionStatus.IDLE  # libpq's, read before every claim: looked up once
NOTHING_DUE = -1  # ms: the moment `refusal` claims at, before any job's run_at, so it finds nothing

log = logging.getLogger("jobs")


def lost(error: BaseException) -> bool:
    """Whether `error` is a lost connection (or no database error at all) rather than a refusal."""
    if not isinstance(error, psycopg.Error):
        return True
    state = error.sqlstate
    if state is None:
        return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)  # said by psycopg, not the server
    return state.startswith(LOST_CLASS) or state in LOST_STATES or state == READ_ONLY


def described(error: psycopg.Error) -> str:
    """The SQLSTATE and the server's message, as one line: "42501 permission denied for table jobs"."""
    message = error.diag.message_primary or str(error).strip()
    return f"{error.sqlstate or 'no SQLSTATE'} {message}"


def still_usable(db: psycopg.Connection[Any] | None, error: BaseException) -> bool:
    """Whether `db` still serves after `error`: a refusal leaves the connection idle and sound."""
    return db is not None and not lost(error) and not db.closed and not db.broken and db.info.transaction_status == IDLE


def reason_of(error: BaseException) -> str:
    """How a failed attempt's reason reads: the error's message, or its type's name; a BaseException names its type."""
    if isinstance(error, psycopg.Error) and error.sqlstate:
        return described(error)  # the server's word, with its SQLSTATE
    if not isinstance(error, Exception):
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return str(error) or type(error).__name__


def timed_out(error: BaseException | None) -> bool:
    """Whether a let-go job's `error` is its timeout, past its point of no return or not."""
    return isinstance(error, TimeoutError) or isinstance(getattr(error, "__cause__", None), TimeoutError)


class TransactionEnded(RuntimeError):
    """A performer ended its job's transaction by a way the worker could not refuse (its raw connection)."""


class JobLost(RuntimeError):
    """An attempt whose end its thread could not settle: the connection was lost, or the settlement refused."""


def lost_attempt(error: BaseException) -> JobLost:
    """The failure a job's attempt is recorded with when its thread could not settle it, `error` being why."""
    if isinstance(error, psycopg.Error) and error.__cause__ is not None:
        return JobLost(f"{reason_of(error.__cause__)} (and recording it was refused: {described(error)})")
    if isinstance(error, psycopg.Error):
        return JobLost(f"its worker's connection was lost while it ran ({described(error)})")
    return JobLost(f"its work thread was lost while it ran ({reason_of(error)})")


class Astray(psycopg.OperationalError):
    """The worker's connection was found in a transaction the worker never began: it is closed, as if lost."""


def expected_idle(db: psycopg.Connection[Any], before: str) -> None:
    """Closes `db` and raises Astray, unless it is outside any transaction (libpq's word: no round trip).

    Between two jobs, and before a claim or a settlement the worker sends in autocommit,
    no transaction is open. One is when a statement was sent past the worker (by a
    thread a performer left running, on the raw connection): what the worker sent then
    would run inside it and never commit. Closing the connection rolls it back, and the
    thread lets go of what it holds, as when a connection is lost.
    """
    found = db.pgconn.transaction_status  # an int: db.info's enum costs ten times the read
    if found != IDLE:
        db.close()
        raise Astray(
            f"its connection was {TransactionStatus(found).name} before {before}: in a transaction the worker "
            "never began (a thread a performer left running may have sent it a statement); it is closed, which "
            "rolls that back"
        )


class Refusals:
    """The refusals one worker has met, so that each is logged once and then counted.

    Its threads share it: the same refusal met by the work threads and the listener is
    logged once. `mended(who)` says that `who` got through again; a refusal none of
    those who met it still meets ends its count, with a line saying how often it came.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._refusals: dict[
            str, list[Any]
        ] = {}  # described refusal -> [times met since logged, when logged, who meet it]

    def heard(self, error: psycopg.Error, who: str, pause: float) -> None:
        """Logs `error`, met by `who` ("worker", "worker's listener"), who tries again in `pause` s."""
        if isinstance(error, psycopg.Error) and error.sqlstate == READ_ONLY:
            log.warning(
                "%s reached a server that is read-only, a standby perhaps (%s); reconnecting in %.1f s",
                who,
                described(error),
                pause,
            )
            return
        if lost(error):
            log.warning("%s lost its database connection (%s); reconnecting in %.1f s", who, error, pause)
            return
        refusal = described(error)
        with self._lock:
            seen = self._refusals.get(refusal)
            if seen is not None:
                seen[2].add(who)
            if seen is not None and time.monotonic() - seen[1] < COMPLAINT_REPEAT:
                seen[0] += 1
                return
            since = "" if seen is None else f" (seen {seen[0]} times since)"
            self._refusals[refusal] = [0, time.monotonic(), {who} if seen is None else seen[2]]
        log.error(
            "the database refused a statement of the %s: %s%s; trying again in %.1f s", who, refusal, since, pause
        )

    def mended(self, who: str) -> None:
        """Hears that `who` got through again; says which refusals have stopped, with how often each came back."""
        if not self._refusals:  # the usual case, read without the lock
            return
        with self._lock:
            for seen in self._refusals.values():
                seen[2].discard(who)
            refusals = {refusal: seen for refusal, seen in self._refusals.items() if not seen[2]}
            for refusal in refusals:
                del self._refusals[refusal]
        for refusal, (again, _, _) in refusals.items():
            log.info(
                "the database accepts the worker's statements again, after: %s (seen %s times since)", refusal, again
            )


def refusal(db: psycopg.Connection[Any], queues: list[str]) -> psycopg.Error | None:
    """The refusal a worker on `queues` would meet on `db`, or None when it can work.

    It claims, settles and promotes as a worker does, at NOTHING_DUE, registers and
    beats a worker row and reads the paused queues, in a transaction rolled back at the
    end, so it finds nothing and changes nothing. A read-only server is a refusal here:
    a worker started on a standby cannot work.
    """
    try:
        with db.transaction(force_rollback=True):
            for queue in queues:
                claims.claimed(db, queue, NOTHING_DUE)
            db.execute(claims.queries["finish"], {"ids": [], "claim": 0, "irrevocable": []})  # a settlement's
            claims.promoted(db, NOTHING_DUE)
            control.registered(db, control.Registration(0, queues, 1, lease=0.001, version=0))
            control.beaten(db, 0)
            control.paused_queues(db)
    except psycopg.Error as error:
        if lost(error) and error.sqlstate != READ_ONLY:
            raise
        return error
    return None
