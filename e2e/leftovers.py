"""What a killed test run leaves behind, swept when the next run starts: its throw-away PostgreSQL servers.

No tether holds a PostgreSQL (pg_ctl makes it a daemon), so a run killed with SIGKILL
leaves its server running in a folder of the temporary directory. Each such folder
names the processes that own it (pgserver's `.handle_pids.json`, or an OWNER file);
`swept` stops the server of a folder whose owners are all gone, and deletes the folder.
A folder whose owners are unknown, or one still alive, is left alone.
"""

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from guestbook import embedded

# The folders the test runs make in the temporary directory, each with its data folder.
FOLDERS = {"guestbook-tests-": "pgdata", "guestbook-e2e-": "pgdata", "jobs-private-pg-": "data"}
OWNER = "owner"  # the file holding the pid of the run that made a folder, where pgserver keeps no list
STOP_WAIT = 10.0  # seconds a left server may take to exit after SIGQUIT before its folder is deleted anyway
POLL = 0.05  # seconds between two looks at whether it has


def owned(folder: Path) -> None:
    """Marks `folder` as this process's, for `swept` to recognise once the process is gone."""
    (folder / OWNER).write_text(str(os.getpid()))


def swept(base: Path | None = None) -> list[Path]:
    """Stops the servers of the folders killed runs left in `base` (the temporary directory) and deletes them.

    Linux only, where /proc tells a server's data folder, so that no other process is stopped.
    """
    base = Path(base or tempfile.gettempdir())
    gone: list[Path] = []
    if not Path("/proc/self").exists():
        return gone
    for prefix, data in FOLDERS.items():
        for folder in base.glob(prefix + "*"):
            owners = owners_of(folder, folder / data)
            if owners is None or any(alive(pid) for pid in owners):
                continue
            stopped(folder / data)
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
    return gone


def owners_of(folder: Path, data: Path) -> list[int] | None:
    """The pids of the processes that own `folder`; None when it does not say (being made, being deleted by its
    last owner, whom pgserver takes off the list first, or not ours)."""
    try:
        if (data / ".handle_pids.json").exists():
            return [int(pid) for pid in json.loads((data / ".handle_pids.json").read_text())] or None
        return [int((folder / OWNER).read_text())]
    except (OSError, ValueError, TypeError):
        return None


def stopped(data: Path) -> None:
    """Ends the PostgreSQL serving `data` at once (SIGQUIT: nothing in it is kept), if one still does."""
    try:
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return  # no server, or it has exited
    if str(data).encode() not in command:
        return  # the pid is another process's now
    os.kill(pid, signal.SIGQUIT)
    deadline = time.monotonic() + STOP_WAIT
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(POLL)


def alive(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (a zombie, which only waits to be reaped, has)."""
    if not embedded.alive(pid):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True
