"""jobs is copied into other apps: it imports psycopg (and what psycopg brings) and the standard library only."""

import subprocess
import sys

from tests.jobs.helpers import PROJECT

# What importing psycopg brings with it: its C speedups (and the Cython runtime they are built
# with), its typing backports.
PSYCOPG = {"psycopg", "psycopg_binary", "psycopg_c", "typing_extensions", "cython_runtime"}
# Modules named by the interpreter's build (sysconfig's data) or by a Cython version.
BUILT = ("_sysconfigdata_", "_cython_")
IMPORTED = """
import sys
before = set(sys.modules)
import jobs, jobs.web, jobs.__main__, jobs.store.enqueue, jobs.runtime.coroutines
print("\\n".join(sorted({name.split(".")[0] for name in set(sys.modules) - before})))
"""


def test_jobs_imports_only_psycopg_and_the_standard_library():
    found = subprocess.run(
        [sys.executable, "-c", IMPORTED], cwd=PROJECT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "jobs" in found and "psycopg" in found
    outside = [
        name
        for name in found
        if name not in sys.stdlib_module_names and name not in PSYCOPG | {"jobs"} and not name.startswith(BUILT)
    ]
    assert outside == [], f"jobs imports {outside}"
