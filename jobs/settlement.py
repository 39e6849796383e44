"""The settlement transaction of a group of jobs, and the savepoint of each job in it.

Every job of a group runs inside a savepoint of its own, so a job that fails rolls
back its own writes and no other job's; the group commits once. Each statement here
costs a round trip, so none is sent before it is needed: the transaction begins with
the first savepoint or the first settlement, and a job's savepoint is made the first
time its performer uses the connection, in the same round trip as the release of the
previous job's. A job that never touches the database (it sends a letter, calls an
API) pays nothing, and a performer starts as soon as its job is claimed.
"""

import psycopg
from psycopg.pq import TransactionStatus

SAVEPOINT = "job"  # the name of the savepoint each job runs in
FORBIDDEN = ("commit", "rollback", "close")  # what a performer may not do to the worker's connection


class Settlement:
    """One settlement transaction on an autocommit connection, begun when first needed.

    `backend` (backends.py), when given, is told each time the transaction begins.
    """

    def __init__(self, db, backend=None):
        self.db, self.backend = db, backend
        self.begun = False
        self.held = False  # a savepoint of an earlier job is open, waiting to be released

    def begin(self) -> None:
        """Begins the transaction, if nothing has yet."""
        if not self.begun:
            self.db.execute("BEGIN")
            self.begun = True
            self._entered()

    def opened(self) -> None:
        """Makes a new savepoint, beginning the transaction or releasing an earlier savepoint at once."""
        statements = [] if self.begun else ["BEGIN"]
        if self.held:
            statements.append(f"RELEASE SAVEPOINT {SAVEPOINT}")
        statements.append(f"SAVEPOINT {SAVEPOINT}")
        self.db.execute("; ".join(statements))
        if not self.begun:
            self.begun = True
            self._entered()
        self.held = True

    def _entered(self) -> None:
        if self.backend is not None:
            self.backend.entered(self.db)

    def rolled_back_to_savepoint(self) -> None:
        """Undoes the current job's writes; its savepoint stays, to be released later."""
        self.db.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")

    def committed(self) -> None:
        if self.begun:
            self.db.execute("COMMIT")

    def rolled_back(self) -> None:
        """Rolls the whole transaction back, unless the connection is gone (then the server has)."""
        if self.begun and not (self.db.broken or self.db.closed):
            self.db.execute("ROLLBACK")

    def for_job(self) -> "Touched":
        """The connection to hand the next performer."""
        return Touched(self)


class Touched:
    """Stands for the worker's connection in a performer; any use of it opens the job's savepoint.

    Everything a performer does with it (execute, cursor, transaction, ...) goes to
    the real psycopg connection; `.connection` is that connection, for code that needs
    the object itself. Committing, rolling back or closing it is refused: the job's
    writes commit with its settlement.
    """

    def __init__(self, settlement: Settlement):
        self._settlement = settlement
        self._open = False

    @property
    def connection(self):
        self._touched()
        return self._settlement.db

    def __getattr__(self, name):
        if name in FORBIDDEN:
            raise psycopg.ProgrammingError(f"a performer may not {name} the worker's connection: "
                                           "its writes commit with its job's settlement")
        self._touched()
        return getattr(self._settlement.db, name)

    def _touched(self) -> None:
        if not self._open:
            self._settlement.opened()
            self._open = True

    def undone(self) -> None:
        """Rolls the job's writes back, if it made any."""
        if self._open:
            self._settlement.rolled_back_to_savepoint()

    def left_failed(self) -> bool:
        """Whether the job left its transaction failed (a statement error it swallowed)."""
        return self._open and self._settlement.db.info.transaction_status == TransactionStatus.INERROR
