"""The report prints every column it is given: here the pressure column, from figures made up for it.

No run is measured: the rows are checked for what they say of the run's settings, so a
setting the report names but no module holds any longer fails here, not at the end of a
benchmark's hour.
"""

import collections

from tests.jobs.pressure import JOB_MS

from . import __main__ as benchmark
from . import pressure, report

RUN = {
    "done": 99.0,
    "offered": 100.0,
    "jobs": 6_000,
    "transactions": 18_000,
    "cpu": 0.5,
    "samples": 600,
    "backend samples": 1_000,
    "lock share": 0.001,
    "snapshots waiting": 0.01,
    "waits": collections.Counter({"Client/ClientRead": 900}),
    "lock waits": collections.Counter({("UPDATE jobs", "SELECT ... FOR UPDATE"): 1}),
    "warnings": collections.Counter(),
}  # the figures of one pressure run, as pressure.pressure answers them


def test_the_pressure_column_names_its_workers_threads_and_the_length_of_its_jobs():
    rows = report.pressure_rows(RUN, benchmark.sized(100, 1, pressure_seconds=5.0, pressure_processes=2))

    assert rows[0] == [
        f"pressure: 2 worker process(es) of {pressure.THREADS} threads, {JOB_MS} ms jobs, 5 s",
        "measured",
    ]
    assert ["workers' warnings", "none"] in rows
