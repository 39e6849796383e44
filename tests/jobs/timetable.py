"""Schedules that worker processes started by the tests hold, loaded with --schedules."""

import jobs

QUEUE = "ticks"  # the queue the tests' schedules queue on; their performer is performers.tick


def ticking(key: str, **when) -> jobs.Schedule:
    """A schedule whose jobs record their tick under `key` (missed="all" unless `when` says otherwise)."""
    return jobs.every(key, queue=QUEUE, name="tick", args={"schedule": key}, **{"missed": "all", **when})


each_second = [ticking("each-second", every=1)]
