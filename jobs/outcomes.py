"""What came of each job of a group, and how the group's settlement ends.

The runner (runner.py) runs a group's jobs and gives each an Outcome; then the group
settles: `committed` deletes its successes and moves its chains and batches on, on its
settlement transaction, and commits; a group that wrote nothing at all settles with
`deleted_alone`, one autocommitted statement.
"""

import logging
from dataclasses import dataclass

from . import flows, store

log = logging.getLogger("jobs")


class LeaseLost(Exception):
    """Another worker took a job over before this one settled it."""


@dataclass
class Outcome:
    """How one attempt went: its counter, its line, and its log record."""

    kind: str  # a field of Counts
    line: str  # what `worked` answers, as in the seed: "ran greet"
    level: int = logging.INFO
    message: str = ""
    final: bool = False  # a failure for good


def committed(settlement, group, succeeded) -> None:
    """Deletes the group's successes and moves its flows on, on its transaction, and commits.

    Raises LeaseLost, before committing, if any of its rows is no longer ours.
    """
    db = settlement.db
    settlement.begin()
    kept = store.finished(db, succeeded)
    lost = [job.id for job in succeeded if job.id not in kept and not job.cancelling]
    if lost or any(outcome.kind == "lease_lost" for _, outcome in group):
        raise LeaseLost(lost)
    moved_flows_on(db, group)
    settlement.committed()


def deleted_alone(db, group, succeeded) -> list:
    """Settles a group that wrote nothing: its successes' rows deleted in one autocommitted statement.

    No performer of the group used the connection, no failure was recorded and no
    chain or batch moves on, so the deletions are all there is to commit, and one
    statement commits them in one round trip where a transaction takes three. A row
    whose lease ran out and that another worker took meanwhile stays that worker's;
    its job is counted as a lost lease, the others as what they were.
    """
    kept = store.finished(db, succeeded)
    lost = [job for job in succeeded if job.id not in kept and not job.cancelling]
    if not lost:
        return group
    log.warning("lease lost: another worker holds jobs %s; they are its to settle", [job.id for job in lost])
    ids = {job.id for job in lost}
    return [(job, taken_over(job) if job.id in ids else outcome) for job, outcome in group]


def taken_over(job) -> Outcome:
    """The outcome of a job that ran while another worker took it over: that worker settles it."""
    return Outcome("lease_lost", f"lease lost {job.name}", logging.WARNING, "ran, but another worker holds it now")


def moved_flows_on(db, group) -> None:
    """Lets chains and batches react to the group's settlements, on the same transaction."""
    done = [job for job, outcome in group if outcome.kind == "processed" and (job.batch or job.flow)]
    ended = [job for job, outcome in group if outcome.final and (job.batch or job.flow)]
    if done or ended:
        flows.settled(db, done, ended)
