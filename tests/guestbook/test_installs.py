"""What each install carries: `make run` what serving needs, with the embedded PostgreSQL as an extra, and
`make test` and `make check` the test tools besides.

The lists are read from pyproject.toml; what make would install is read from its dry run
(`make -n`) on a virtual environment that does not exist yet, one stamp per extra.
"""

import re
import subprocess
import tomllib

import pytest

from ..jobs.helpers import PROJECT

TEST_TOOLS = ("pytest", "playwright", "ruff", "mypy", "django", "sqlalchemy", "matplotlib", "aiosmtpd")


def project() -> dict:
    """pyproject.toml's [project] table."""
    with (PROJECT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]


def named(requirement: str) -> str:
    """The package a requirement names, lower case, without its version or extras."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found, requirement
    return found.group(0).lower()


def test_the_base_install_holds_no_test_tool_and_no_embedded_server():
    base = [named(requirement) for requirement in project()["dependencies"]]

    assert [tool for tool in (*TEST_TOOLS, "pgserver") if tool in base] == []


def test_the_embedded_server_is_an_extra_of_its_own_that_the_tests_install_too():
    extras = project()["optional-dependencies"]

    assert [named(requirement) for requirement in extras["embedded"]] == ["pgserver"]
    assert "guestbook[embedded]" in extras["test"]


def dry_run(target: str, venv) -> str:
    """What `make TARGET` would run with its virtual environment at `venv`, without running it."""
    said = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    return said.stdout


@pytest.mark.parametrize(
    ("target", "extra"),
    [("run", "embedded"), ("jobs", "embedded"), ("test", "test"), ("check", "test"), ("bench", "test")],
)
def test_each_command_installs_the_extra_it_needs(tmp_path, target, extra):
    assert f"pip install -q -e '.[{extra}]'" in dry_run(target, tmp_path / "venv")


def test_each_extra_has_a_stamp_of_its_own_so_a_change_of_extra_reinstalls(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed-run").touch()

    assert "pip install" not in dry_run("run", venv)
    assert "pip install -q -e '.[test]'" in dry_run("test", venv)
    (venv / ".installed-run").unlink()
    (venv / ".installed-test").touch()
    assert "pip install -q -e '.[embedded]'" in dry_run("run", venv)
