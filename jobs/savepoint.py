"""The connection a performer is handed: its job's savepoint is made when it is first touched.

Every job of a settlement transaction runs inside a savepoint of its own, so a job
that fails rolls back its own writes and no other job's. A savepoint costs a round
trip to the server, and many jobs never touch the database (they send a letter or
call an API); so the savepoint is made the first time the performer uses the
connection, in the same round trip that releases the previous job's, and a job that
never uses it pays nothing.
"""

from psycopg.pq import TransactionStatus

SAVEPOINT = "job"  # the name of the savepoint each job runs in


class Savepoints:
    """The savepoints of one settlement transaction, one job after another."""

    def __init__(self, db):
        self.db = db
        self.held = False  # a savepoint of an earlier job is open, waiting to be released

    def for_job(self) -> "Touched":
        """The connection to hand the next performer."""
        return Touched(self)

    def opened(self) -> None:
        """Makes a new savepoint, releasing an earlier one in the same round trip."""
        release = f"RELEASE SAVEPOINT {SAVEPOINT}; " if self.held else ""
        self.db.execute(f"{release}SAVEPOINT {SAVEPOINT}")
        self.held = True

    def rolled_back(self) -> None:
        """Undoes the current job's writes; its savepoint stays, to be released later."""
        self.db.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")


class Touched:
    """Stands for the worker's connection in a performer; any use of it opens the job's savepoint.

    Everything a performer does with it (execute, cursor, transaction, ...) goes to
    the real psycopg connection; `.connection` is that connection, for code that needs
    the object itself (the savepoint is open by then).
    """

    def __init__(self, savepoints: Savepoints):
        self._savepoints = savepoints
        self._open = False

    @property
    def connection(self):
        self._touched()
        return self._savepoints.db

    def __getattr__(self, name):
        self._touched()
        return getattr(self._savepoints.db, name)

    def _touched(self) -> None:
        if not self._open:
            self._savepoints.opened()
            self._open = True

    def undone(self) -> None:
        """Rolls the job's writes back, if it made any."""
        if self._open:
            self._savepoints.rolled_back()

    def left_failed(self) -> bool:
        """Whether the job left its transaction failed (a statement error it swallowed)."""
        return self._open and self._savepoints.db.info.transaction_status == TransactionStatus.INERROR
