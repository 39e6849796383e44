"""The embedded PostgreSQL: asked for without its extra, it says which to install; the tests' throw-away one
is gone when pytest ends."""

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from guestbook import embedded
from guestbook.__main__ import main

from ..jobs.helpers import PROJECT

# A test run of its own, with the tests' fixtures, that only says where its database is.
SPEC = """
import os


def test_database(database_url):
    with open(os.environ["DATABASE_REPORT"], "w") as report:
        report.write(database_url)
"""


@pytest.fixture
def without_pgserver(monkeypatch):
    """An install without the extra `embedded`: importing pgserver fails, as it would."""
    monkeypatch.setitem(sys.modules, "pgserver", None)


def test_the_embedded_server_without_its_extra_names_the_extra_to_install(without_pgserver, tmp_path):
    with pytest.raises(embedded.NotInstalled, match=r"install the extra 'embedded' \(pip install -e '\.\[embedded\]'"):
        embedded.server(tmp_path / "pgdata")


def test_serving_without_a_database_or_the_extra_says_which_to_install(without_pgserver, monkeypatch, capsys):
    monkeypatch.delenv("DATABASE_URL", raising=False)

    assert main(["serve", "--development"]) == 2
    assert "install the extra 'embedded'" in capsys.readouterr().err


def postmasters_in(folder: Path) -> list[int]:
    """The pids of the PostgreSQL servers whose data folder lies in `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or one that ended while being read
            continue
        if b"-D" in command and str(folder).encode() in command[command.index(b"-D") + 1]:
            found.append(int(proc.name))
    return found


def test_the_tests_throwaway_postgresql_is_stopped_when_pytest_ends(tmp_path):
    spec, report = tmp_path / "test_database.py", tmp_path / "database"
    spec.write_text(SPEC)
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider"]
    ran = subprocess.run(
        [*command, "--rootdir", str(tmp_path), str(spec)],
        cwd=PROJECT,
        env={**env, "DATABASE_REPORT": str(report)},
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr

    socket_folder = Path(parse_qs(urlsplit(report.read_text()).query)["host"][0])
    assert postmasters_in(socket_folder.parent) == []
    assert not socket_folder.parent.exists()
