"""The manual's quick start runs as written, on a copy of the folder as "Copying jobs into your app" says to take it.

The blocks of jobs/README.md whose first lines are `# quickstart.py` and `# dashboard.py` are
written to files of those names beside a copy of jobs/, and each is run as a process of its
own on the tests' database, as a reader would run them in their app: the quick start on the
whole folder, and on copies that leave out what the manual says a copy may leave out.
The copy is the only folder of ours such a process sees: it starts without `site` (this
project's editable install, a .pth file there, would find a left-out folder in the project's
jobs/), with psycopg's site-packages named alone on its path.
"""

import contextlib
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.jobs.helpers import PROJECT, WAIT

MANUAL = PROJECT / "jobs" / "README.md"
SITE = str(Path(psycopg.__file__).resolve().parents[1])  # where psycopg, and what it imports, are installed
ENDED = ""  # what lines_of answers once the process has closed its output
# What a copy may leave out, as the manual's section on copying names them: paths in jobs/.
OPTIONAL = {
    "web": ("web",),
    "cli": ("cli", "__main__.py"),
    "schedules": ("store/schedules.py", "store/schedules.sql"),
    "limits": ("store/limits.py",),
    "pulse": ("store/pulse.py", "store/pulse.sql"),
}
LEFT_OUT = [tuple(OPTIONAL), ("web", "cli"), *((piece,) for piece in OPTIONAL)]  # the copies the quick start runs on


def written(folder: Path, script: str) -> None:
    """The manual's Python block whose first line is `# script`, written to `folder / script`."""
    (block,) = re.findall(rf"^```python\n(# {re.escape(script)}\n.*?)^```", MANUAL.read_text(), re.S | re.M)
    (folder / script).write_text(block)


def copied(folder: Path, leaving: tuple[str, ...] = ()) -> Path:
    """`folder`, holding a copy of jobs/ without the parts of OPTIONAL named in `leaving`."""
    left = {PROJECT / "jobs" / path for piece in leaving for path in OPTIONAL[piece]}

    def ignored(where: str, names: list[str]) -> set[str]:
        return {name for name in names if name == "__pycache__" or Path(where) / name in left}

    shutil.copytree(PROJECT / "jobs", folder / "jobs", ignore=ignored)
    return folder


def lines_of(process: subprocess.Popen) -> "queue.Queue[str]":
    """The process's output, line by line, read on a thread so that a test can wait on it with a timeout;
    ENDED once the output closes."""
    said: queue.Queue[str] = queue.Queue()

    def read(output) -> None:
        for line in output:
            said.put(line)
        said.put(ENDED)

    threading.Thread(target=read, args=(process.stdout,), daemon=True).start()
    return said


def awaited(said: "queue.Queue[str]", *starts: str) -> dict[str, str]:
    """The first line that begins with each of `starts`, in any order, within WAIT seconds each."""
    found: dict[str, str] = {}
    while len(found) < len(starts):
        line = said.get(timeout=WAIT)
        assert line != ENDED, f"the process ended without saying {[start for start in starts if start not in found]}"
        found.update((start, line) for start in starts if line.startswith(start) and start not in found)
    return found


def ctrl_c_as_in_a_terminal() -> None:
    """Lets SIGINT reach the script as Ctrl-C in a terminal does.

    A command that a non-interactive shell starts in the background (as CI's script
    starts the tests) has SIGINT ignored, and its children inherit that: Python then
    installs no KeyboardInterrupt, and the SIGINT this test sends would do nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted(process: subprocess.Popen) -> int:
    """Sends Ctrl-C's SIGINT and answers the exit status; a process that does not stop is killed."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(WAIT)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # faulthandler writes where each thread is, for the report
        process.wait(WAIT)
        raise
    finally:
        process.kill()  # a script that did not stop would take the next tests' jobs


def environment(folder: Path, database_url: str) -> dict[str, str]:
    """The environment of a process run in `folder`: the copy and psycopg its only packages, the tests' database."""
    return {
        "DATABASE_URL": database_url,
        "PORT": "0",
        "PYTHONPATH": os.pathsep.join([str(folder), SITE]),
        "PATH": "/usr/bin:/bin",
    }


@contextlib.contextmanager
def running(folder: Path, script: str, database_url: str) -> Iterator["queue.Queue[str]"]:
    """`python script` at work in `folder`, its output line by line; stopped with Ctrl-C after, which it must
    take as its way out (status 0)."""
    process = subprocess.Popen(
        [sys.executable, "-S", "-X", "faulthandler", script],
        cwd=folder,
        env=environment(folder, database_url),
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        yield lines_of(process)
    finally:
        exited = interrupted(process)
    assert exited == 0, f"{script} exited with status {exited} on Ctrl-C"


def test_the_quick_start_runs_its_job_and_the_dashboard_beside_it_answers(db, database_url, tmp_path):
    folder = copied(tmp_path)
    written(folder, "quickstart.py")
    written(folder, "dashboard.py")
    with running(folder, "quickstart.py", database_url) as said:
        assert awaited(said, "receipt for order")["receipt for order"] == "receipt for order 42 sent\n"
        with running(folder, "dashboard.py", database_url) as shown:
            address = awaited(shown, "the dashboard is at ")["the dashboard is at "].split()[-1]
            with urllib.request.urlopen(address, timeout=WAIT) as answer:
                assert answer.status == 200 and "<h1>Queues</h1>" in answer.read().decode()


@pytest.mark.parametrize("leaving", LEFT_OUT, ids="+".join)
def test_a_copy_without_the_parts_it_may_leave_out_runs_the_quick_start(db, database_url, tmp_path, leaving):
    folder = copied(tmp_path, leaving)
    written(folder, "quickstart.py")
    assert not any((folder / "jobs" / path).exists() for piece in leaving for path in OPTIONAL[piece])
    with running(folder, "quickstart.py", database_url) as said:
        assert awaited(said, "receipt for order")["receipt for order"] == "receipt for order 42 sent\n"
    star = [sys.executable, "-S", "-c", "from jobs import *"]  # each name of jobs.__all__ is there to take
    subprocess.run(star, cwd=folder, env=environment(folder, database_url), check=True, timeout=WAIT)
