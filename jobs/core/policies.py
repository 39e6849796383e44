"""What happens after a job fails: how many attempts it gets and how long it waits between them.

A performer may carry a `Policy` (set with the `policy` decorator); the worker asks it,
after each failure, whether the job runs again and when. Without one, a job gets
ATTEMPTS attempts, waiting attempts^4 + 2 seconds after each failure (3, 18, 83 and
258 s), as Rails' `polynomially_longer` does.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .job import ATTEMPTS, Job

EXPONENTIAL_FIRST = 1.0  # seconds before the first retry of an exponential backoff
EXPONENTIAL_CAP = 30.0  # seconds an exponential backoff never waits longer than

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
