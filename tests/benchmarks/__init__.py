"""The job queue's benchmark: `python -m tests.benchmarks` (or `make bench`), not part of the tests.

It sets jobs beside plain SQL on the same database in the same run, column for column
as issue 7's table has them. How a run is put together, file by file:
  database.py  the benchmark's own schema, the plain-SQL table made LIKE jobs, filling it.
  timing.py    processes let go at once, latencies, percentiles and resident memory.
  plain.sql    the statements of the plain-SQL limits; plain.py runs them.
  queue.py     the same measurements made through jobs; checks.py the scale and memory checks.
  pressure.py  worker processes of many threads under a steady offer of short jobs (issue 13).
  report.py    the table, the ratios and a verdict for each goal of the issue.
Run apart: signup.py (a sign-up beside a slow mail server) and fillfactor.py (where a
claim writes a row's new version, at each fillfactor).
"""
