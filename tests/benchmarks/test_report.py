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


def test_the_writing_rows_set_jobs_beside_plain_sql_in_processes_and_in_one_process_s_threads():
    figures = {"jobs writing 4": 2_000.0, "plain writing 4": 2_500.0, "plain threads writing 4": 2_200.0}

    rows = report.comparisons(figures, benchmark.sized(100, 1, pressure_seconds=5.0, pressure_processes=1))

    assert rows[-2][0] == "writing jobs, 4 threads" and rows[-2][-1] == "0.80"
    assert rows[-1] == ["", "", "2.2 k/s", "the same, 4 threads of one process", "0.91"]
