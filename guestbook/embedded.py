"""A private PostgreSQL for local runs and tests, from the `pgserver` wheel.

When DATABASE_URL is not set, `make run` keeps one in .pgdata/ and the tests start
a throw-away one; this module is the only place that knows how. The wheel is the
extra `embedded` (pip install -e '.[embedded]'), which a deploy naming its database leaves out.
"""

import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

RUN_DATA = Path(".pgdata")  # where `make run` keeps its database, relative to the project
EXTRA = "embedded"  # the extra of pyproject.toml that installs pgserver


class NotInstalled(RuntimeError):
    """The embedded server was asked for, and the pgserver wheel is not installed."""


def server(data: Path, *, throwaway: bool = False):
    """Starts (or joins) the PostgreSQL whose data folder is `data`, and returns it.

    The server stops when the last process that asked for it exits; a throw-away
    one is also deleted then. Call `.get_uri()` on the answer for its address.
    """
    pgserver = imported()
    data = Path(data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    forget_dead_owners(data)
    return pgserver.get_server(data, cleanup_mode="delete" if throwaway else "stop")


@contextmanager
def throwaway(prefix: str) -> Iterator[str]:
    """The address of a new PostgreSQL in a temporary folder, stopped and deleted on leaving, before its folder goes.

    Left to pgserver, the server would outlive the folder by a minute or so: it stops
    it from a process of its own, after its last owner has exited.
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        started = server(Path(folder) / "pgdata", throwaway=True)
        try:
            yield started.get_uri()
        finally:
            with suppress(FileNotFoundError):  # another run's sweep deleting it too: gone either way
                started.cleanup()


def imported():
    """The pgserver module, imported only when the embedded server is used; NotInstalled says how to get it."""
    try:
        with warnings.catch_warnings():
            # pgserver looks for a runtime folder that containers and CI machines often lack
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            import pgserver
    except ImportError:
        raise NotInstalled(
            f"the embedded PostgreSQL needs the pgserver wheel: install the extra {EXTRA!r} "
            f"(pip install -e '.[{EXTRA}]', as `make run` does), or set DATABASE_URL to a database"
        ) from None
    return pgserver


def forget_dead_owners(data: Path) -> None:
    """Drops the pids of processes that are gone from pgserver's list of owners.

    pgserver stops its server when the last owner in `.handle_pids.json` exits. An
    owner killed with SIGKILL never takes its pid off the list, and the server would
    then never be stopped, so the list is cleaned before every start.
    """
    owners = data / ".handle_pids.json"
    if not owners.exists():
        return
    try:
        pids = json.loads(owners.read_text())
    except ValueError:
        pids = []
    owners.write_text(json.dumps([pid for pid in pids if alive(pid)]))


def alive(pid: int) -> bool:
    """Whether a process with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
