"""The manual's quick start runs as written, on a copy of the folder alone: its job is run, its dashboard answers.

The block of jobs/README.md whose first line is `# quickstart.py` is written to a file of
that name beside a copy of jobs/, as "Copying jobs into your app" says to take it, and run as
a process of its own on the tests' database, as a reader would run it in their app.
"""

import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request

from tests.jobs.helpers import PROJECT, WAIT

MANUAL = PROJECT / "jobs" / "README.md"
BLOCK = re.compile(r"^```python\n# quickstart\.py\n(.*?)^```", re.S | re.M)


def lines_of(process: subprocess.Popen) -> "queue.Queue[str]":
    """The process's output, line by line, read on a thread so that a test can wait on it with a timeout."""
    said: queue.Queue[str] = queue.Queue()

    def read(output) -> None:
        for line in output:
            said.put(line)

    threading.Thread(target=read, args=(process.stdout,), daemon=True).start()
    return said


def awaited(said: "queue.Queue[str]", *starts: str) -> dict[str, str]:
    """The first line that begins with each of `starts`, in any order, within WAIT seconds each."""
    found: dict[str, str] = {}
    while len(found) < len(starts):
        line = said.get(timeout=WAIT)
        found.update((start, line) for start in starts if line.startswith(start) and start not in found)
    return found


def ctrl_c_as_in_a_terminal() -> None:
    """Lets SIGINT reach the quick start as Ctrl-C in a terminal does.

    A command that a non-interactive shell starts in the background (as CI's script
    starts the tests) has SIGINT ignored, and its children inherit that: Python then
    installs no KeyboardInterrupt, and the SIGINT this test sends would do nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_the_quick_start_runs_its_job_and_serves_its_dashboard(db, database_url, tmp_path):
    (source,) = BLOCK.findall(MANUAL.read_text())
    (tmp_path / "quickstart.py").write_text(source)
    shutil.copytree(PROJECT / "jobs", tmp_path / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"DATABASE_URL": database_url, "PORT": "0", "PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "quickstart.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        # The worker may run the job before the server prints its address.
        lines = awaited(lines_of(process), "the dashboard is at ", "receipt for order")
        with urllib.request.urlopen(lines["the dashboard is at "].split()[-1], timeout=WAIT) as answer:
            assert answer.status == 200 and "<h1>Queues</h1>" in answer.read().decode()
        assert lines["receipt for order"] == "receipt for order 42 sent\n"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            exited = process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)  # faulthandler writes where each thread is, for the report
            process.wait(WAIT)
            raise
        finally:
            process.kill()  # a quick start that did not stop would take the next tests' jobs
    assert exited == 0
