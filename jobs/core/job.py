"""A job as a worker holds it while it runs, what becomes of it when it fails, and how a claim's rows become Jobs.

A performer may carry a `Policy` (the `policy` decorator): after each failure the worker asks it whether
the job runs again, and when. Without one, a job gets ATTEMPTS attempts, waiting attempts^4 + 2 seconds
after each failure (3, 18, 83 and 258 s), as Rails' `polynomially_longer` does. claims.py's claim and
reaper read their rows with `job_row`; running.py hands the Job to its performer (`current_job()`).
"""

import functools
import json
import operator
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.cursor import BaseCursor
from psycopg.rows import RowMaker

LEASE = 30.0  # seconds a claim holds a job before another worker may take it again
ATTEMPTS = 5  # attempts a job gets unless its performer's policy says otherwise; written on every insert
EXPONENTIAL_FIRST = 1.0  # seconds before the first retry of an exponential backoff
EXPONENTIAL_CAP = 30.0  # seconds an exponential backoff never waits longer than

# A cancel the listener hears and a performer's point of no return are decided one at a time:
# whichever comes first decides the job's fate (Job.point_of_no_return, maintenance.cancelled_in_hand).
FATE = threading.Lock()

# What runs a job: perform(db, args), `db` standing for the worker's connection (transaction.Touched),
# `args` the job's arguments. It may carry a Policy (below).
Performer = Callable[[Any, dict[str, Any]], object]


class JobCancelled(Exception):
    """Raised at a job's point of no return when an operator cancelled it, or its worker let it go, first: it stops
    there, having done nothing."""


class StoppedPastNoReturn(Exception):
    """Why a job its worker let go past its point of no return (its timeout, a stop's grace) is shelved, not retried."""


@dataclass
class Job:
    """A claimed job as the worker holds it while it runs.

    A performer reads it with `current_job()`. `cancelled` is set when the job should
    stop: it timed out, was cancelled, or its worker is shutting down past its grace;
    a performer that can stop early may wait on it or check it. `deadline` is the
    time.monotonic() moment its timeout runs out, while it runs (None: no timeout).
    A performer about to do what no rollback undoes calls `point_of_no_return` first.
    """

    id: int
    queue: str
    name: str
    args: dict[str, Any] = field(repr=False)  # may hold secrets: left out of the job's repr, and so of logs
    priority: int
    due_at: int  # when it was due, before the claim moved run_at on
    attempt: int  # this attempt, counted from 1
    max_attempts: int
    key: str | None  # its concurrency key: one job of a key runs at a time
    batch: int | None  # the batch it belongs to, or whose callback it is
    flow: dict[str, Any] | None = field(
        repr=False
    )  # a chain's step: the steps after it and on_failure; a callback: {"callback": true}
    claim: int | None  # the token of the claim that holds it (None for a reaped job)
    claimed_at: int  # when the claim (or the reaper) took it, ms on the database's clock
    final: bool = field(default=False)  # set by the worker: a failure now ends the job
    deadline: float | None = field(
        default=None, compare=False
    )  # while it runs with a timeout: when it must end (time.monotonic())
    cancelling: bool = field(default=False, compare=False)  # an operator cancelled it while held: it is shelved
    irrevocable: bool = field(default=False, compare=False)  # past its point of no return: a cancel no longer stops it
    cancel_too_late: bool = field(default=False, compare=False)  # a cancel came past that point (logged once)
    let_go: bool = field(default=False, compare=False)  # its worker let it go while it ran: it must not pass that point
    performing: bool = field(default=False, compare=False)  # its performer was started and has not returned (the Hand)

    @property
    def cancelled(self) -> threading.Event:
        """Set when the job should stop. Made on first use: most jobs never need one, and a claim makes thousands."""
        event: threading.Event | None = self.__dict__.get("_cancelled")
        if event is None:  # setdefault keeps the first one made, if two threads get here at once
            event = self.__dict__.setdefault("_cancelled", threading.Event())
        return event

    def point_of_no_return(self) -> None:
        """Marks the moment from which the performer does what no rollback undoes, such as handing a letter over.

        Raises JobCancelled when the worker heard an operator's cancel before it, or let
        the job go (its timeout, a stop's grace): the performer stops there, having done
        nothing, and the job is settled as the cancel or the letting go says. From then on
        a cancel no longer stops the job: a success is deleted as any other (never shelved,
        so a retry from the shelf cannot do it twice), and a failure goes on the shelf as
        cancelled, not retried; and a job its worker lets go is shelved, never started again
        (holdings.py).
        """
        with FATE:
            if self.cancelling or self.let_go:
                why = "cancelled" if self.cancelling else "let go by its worker"
                raise JobCancelled(
                    f"job {self.id} ({self.name} on {self.queue}) was {why} before its point of no return"
                )
            self.irrevocable = True


P = TypeVar("P", bound=Callable[..., object])  # a performer, decorated


def polynomial(attempt: int) -> float:
    """attempt^4 + 2 seconds: the default backoff."""
    return attempt**4 + 2


def exponential(first: float = EXPONENTIAL_FIRST, cap: float = EXPONENTIAL_CAP) -> Callable[[int], float]:
    """A backoff that waits `first` seconds, then doubles each time, never past `cap`."""
    return lambda attempt: min(cap, first * 2 ** (attempt - 1))


class intervals:
    """A backoff read from a list: the n-th failure waits the n-th interval, in seconds.

    When the list runs out, the job has failed for good; a policy made with it and no
    `attempts` of its own allows exactly one attempt more than the list is long.
    """

    def __init__(self, *seconds: float) -> None:
        if not seconds or any(s < 0 for s in seconds):
            raise ValueError(f"intervals need one or more waits of 0 s or more, got {seconds!r}")
        self.seconds = tuple(seconds)

    def __call__(self, attempt: int) -> float | None:
        return self.seconds[attempt - 1] if attempt <= len(self.seconds) else None

    def __repr__(self) -> str:
        return f"intervals{self.seconds!r}"


@dataclass(frozen=True)
class Policy:
    """A performer's failure policy.

    attempts: how many attempts a job gets in all (1: no retry).
    backoff: seconds to wait after failed attempt n; None from it ends the retries.
    retry_on: the exception types worth another attempt; any other fails for good.
    on_error: called as on_error(job, exception) after every failure, not only the last.
    timeout: seconds an attempt may run before it fails with TimeoutError (None: the
    worker's own timeout, if it has one).
    """

    attempts: int = ATTEMPTS
    backoff: Callable[[int], float | None] = polynomial
    retry_on: Sequence[type[BaseException]] = (Exception,)
    on_error: Callable[[Job, BaseException], object] | None = None
    timeout: float | None = None

    def wait_after(self, attempt: int, error: BaseException) -> float | None:
        """Seconds before the next attempt after failed attempt `attempt`, or None when final."""
        if attempt >= self.attempts or not isinstance(error, tuple(self.retry_on)):
            return None
        return self.backoff(attempt)

    def is_last(self, attempt: int) -> bool:
        """Whether a failure of attempt `attempt` would be final whatever it raised."""
        return attempt >= self.attempts or self.backoff(attempt) is None


DEFAULT = Policy()
NO_RETRY = Policy(attempts=1)


def policy(
    attempts: int | None = None,
    backoff: Callable[[int], float | None] = polynomial,
    retry_on: Iterable[type[BaseException]] = (Exception,),
    on_error: Callable[[Job, BaseException], object] | None = None,
    timeout: float | None = None,
) -> Callable[[P], P]:
    """Decorates a performer with its failure policy (see `Policy`)."""
    if attempts is None:
        attempts = len(backoff.seconds) + 1 if isinstance(backoff, intervals) else ATTEMPTS
    if attempts < 1:
        raise ValueError(f"a policy needs at least one attempt, got {attempts}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"a policy's timeout is a number of seconds above 0, got {timeout!r}")
    chosen = Policy(attempts, backoff, tuple(retry_on), on_error, timeout)

    def decorate(perform: P) -> P:
        # A function takes attributes of its own, which a Callable's type cannot say.
        perform.policy = chosen  # type: ignore[attr-defined]
        return perform

    return decorate


def policy_of(perform: object) -> Policy:
    """The policy a performer carries, or the default."""
    chosen: Policy = getattr(perform, "policy", DEFAULT)
    return chosen


# a claim's columns
CLAIMED = tuple(f.name for f in fields(Job) if f.default is MISSING and f.default_factory is MISSING)


def job_row(cursor: BaseCursor[Any, Any]) -> RowMaker[Job]:
    """A psycopg row factory that makes a Job of each row, taking its columns by name.

    The columns are matched to Job's fields once per statement, and each row is then
    picked into the fields' order: as safe as psycopg's class_row (no link between
    the order of RETURNING and of the fields), at a fraction of its cost per row.
    """
    result = cursor.pgresult  # its field names: cursor.description would build a Column object for each
    assert result is not None, "psycopg asks for a row maker once a statement has a result"
    pick = picker(tuple(result.fname(n) for n in range(result.nfields)))
    return lambda values: Job(*pick(values))


@functools.cache
def picker(names: tuple[bytes, ...]) -> Callable[[Sequence[Any]], Any]:
    """What picks a Job's fields, in order, out of a row of columns `names`."""
    columns = [name.decode() for name in names]
    missing = [name for name in CLAIMED if name not in columns]
    if missing:
        raise LookupError(f"the claim's statement returns no column for {', '.join(missing)} of a Job")
    return operator.itemgetter(*(columns.index(name) for name in CLAIMED))


_decoder = json.JSONDecoder()


class ArgsLoader(Loader):
    """Reads a claim's jsonb columns (args, flow) into Python, as psycopg's own loader does, at a third of its cost.

    psycopg's loader hands the column's bytes to json.loads, which first works out
    their encoding and checks their type: for a no-op job's few arguments that costs
    more than its share of the claim. jsonb's text from the server is always UTF-8
    and always one JSON value, so it is decoded and parsed straight away. Registered
    on the claim's cursor only (claims.claim_answer): a performer's own reads keep the loads
    its app set up.
    """

    def load(self, data: Buffer) -> Any:
        return _decoder.decode(str(data, "utf-8"))
