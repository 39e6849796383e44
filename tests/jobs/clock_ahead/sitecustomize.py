"""Makes a worker process's clock run CLOCK_AHEAD seconds fast, as on a machine whose clock is wrong.

A test that starts a worker with this folder on PYTHONPATH gets this module imported
at the process's start, before anything reads the time.
"""

import os
import time

AHEAD = float(os.environ.get("CLOCK_AHEAD", "0"))  # seconds this process's clock is ahead

_time, _time_ns = time.time, time.time_ns
time.time = lambda: _time() + AHEAD
time.time_ns = lambda: _time_ns() + int(AHEAD * 1_000_000_000)
