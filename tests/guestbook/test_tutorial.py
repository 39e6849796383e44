"""The tutorial works as written: every block, applied to a copy of the checkout, lints, formats and passes its tests.

docs/tutorial.md's code blocks are told apart by their first line:
  # guestbook/notices.py          a file the reader makes; "# PATH, continued" adds to its end
  --- a/guestbook/upkeep.py       a change to a file, as a diff: each hunk, after its @@ line, is found by its lines
  # from guestbook/auth.py        an excerpt of the code (tests/test_docs.py checks that the code still holds it)
  # not run: REASON               a command the reader types, and why no test runs it as it stands
The steps (the `## ` sections) are applied in turn to a copy of the checkout; after each, the files it wrote
must pass `ruff check` and `ruff format --check`, as `make check` would. Then the whole copy must, and the
tests the tutorial wrote run there, with those of the modules it changed (tests/guestbook/test_entries.py for
guestbook/entries.py), each command a process of its own, as the reader would run them.
"""

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
# What the copy leaves out of the checkout's top folder: what tools and runs make, never the tutorial's business.
LEFT_OUT = {".venv", ".git", ".pgdata", "outbox", ".mypy_cache", ".ruff_cache", ".pytest_cache", "node_modules"}
STEP = re.compile(r"^## ", re.M)
BLOCK = re.compile(r"^```\w*\n(.*?)^```", re.S | re.M)
MADE = re.compile(r"# (?P<path>[\w/]+\.py)(?P<continued>, continued)?")
CHANGED = re.compile(r"--- a/(?P<path>[\w/.]+)\n\+\+\+ b/(?P=path)\n")
HUNK = re.compile(r"^@@.*\n", re.M)
WRITES_NOTHING = re.compile(r"(?:#|--) (?:from [\w/.]+|not run: .+)")
CHECKS = (("ruff", "check", "--quiet"), ("ruff", "format", "--check", "--quiet"))


def steps() -> list[tuple[str, list[str]]]:
    """The tutorial's steps, each as its title and its code blocks."""
    return [(step.partition("\n")[0], BLOCK.findall(step)) for step in STEP.split(TUTORIAL.read_text())]


def patched(text: str, diff: str, path: str) -> str:
    """`text` with each hunk of `diff` applied: its old lines, found exactly once in `text`, made its new lines."""
    for hunk in HUNK.split(diff)[1:]:
        lines = hunk.splitlines(keepends=True)
        old = "".join(line[1:] if line[0] in "- " else line for line in lines if line[0] != "+")
        new = "".join(line[1:] if line[0] in "+ " else line for line in lines if line[0] != "-")
        assert text.count(old) == 1, f"the tutorial's change to {path} no longer applies: it is not once in it:\n{old}"
        text = text.replace(old, new)
    return text


def applied(block: str, tree: Path) -> str | None:
    """Applies one block of the tutorial to `tree`; returns the path it wrote, None for a block that writes nothing."""
    first, _, rest = block.partition("\n")
    if made := MADE.fullmatch(first):
        file = tree / made["path"]
        file.write_text(file.read_text() + "\n\n" + rest if made["continued"] else rest)
        return made["path"]
    if changed := CHANGED.match(block):
        file = tree / changed["path"]
        file.write_text(patched(file.read_text(), block[changed.end() :], changed["path"]))
        return changed["path"]
    assert WRITES_NOTHING.fullmatch(first), f"the tutorial holds a block of no kind its test knows:\n{block}"
    return None


def left_out(folder: str, names: list[str]) -> set[str]:
    """What copytree leaves out of `folder`: LEFT_OUT at the top (guestbook/templates/outbox/ is the code's)."""
    return LEFT_OUT.intersection(names) if Path(folder) == ROOT else set()


def run(command: tuple[str, ...], tree: Path, **env: str) -> subprocess.CompletedProcess:
    """`python -m COMMAND` in `tree`, as a process of its own, its output kept."""
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=tree, env=os.environ | env, capture_output=True, text=True
    )


def complaints(tree: Path, paths: list[str]) -> list[str]:
    """What ruff's linter and formatter say of `paths` in `tree`, one entry per check that failed."""
    said = (run((*check, *paths), tree) for check in CHECKS)
    return [process.stdout + process.stderr for process in said if process.returncode != 0]


@pytest.fixture(scope="module")
def followed(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the checkout with the tutorial followed, and what ruff said after each step and at the end."""
    tree = tmp_path_factory.mktemp("tutorial") / "checkout"
    shutil.copytree(ROOT, tree, ignore=left_out)
    said = []
    for title, blocks in steps():
        written = sorted({path for block in blocks if (path := applied(block, tree)) and path.endswith(".py")})
        said += [f"after the step {title!r}: {complaint}" for complaint in complaints(tree, written) if written]
    return tree, said + [f"the whole copy: {complaint}" for complaint in complaints(tree, ["."])]


def test_every_step_of_the_tutorial_lints_and_is_formatted(followed):
    _, said = followed
    assert not said, "ruff, on the tutorial's code as written:\n" + "\n".join(said)


@pytest.mark.slow
def test_the_tutorial_s_tests_pass_on_its_code(followed, database_url):
    tree, _ = followed
    written = sorted(str(path.relative_to(tree)) for path in (tree / "tests").rglob("test_*.py") if is_new(path, tree))
    assert sum(name.startswith("test_") for path in written for name in functions(tree / path)), "it writes no test"
    process = run(("pytest", "-q", "-p", "no:cacheprovider", *written), tree, DATABASE_URL=database_url)
    assert process.returncode == 0, process.stdout + process.stderr


@pytest.mark.slow
def test_the_tests_of_the_modules_the_tutorial_changes_pass_on_its_code(followed, database_url):
    tree, _ = followed
    changed = {match["path"] for _, blocks in steps() for block in blocks if (match := CHANGED.match(block))}
    tests = sorted(test for path in changed if (tree / (test := its_tests(path))).exists())
    assert tests, f"no tests of the modules the tutorial changes: {sorted(changed)}"
    process = run(("pytest", "-q", "-p", "no:cacheprovider", *tests), tree, DATABASE_URL=database_url)
    assert process.returncode == 0, process.stdout + process.stderr


def its_tests(path: str) -> str:
    """The test module of the module `path`, as tests/ mirrors the packages: guestbook/entries.py's test_entries.py."""
    module = Path(path)
    return str(Path("tests", *module.parts[:-1], f"test_{module.stem}.py"))


def is_new(path: Path, tree: Path) -> bool:
    """Whether the file `path` of `tree` is one the tutorial made, not one of the checkout."""
    return not (ROOT / path.relative_to(tree)).exists()


def functions(path: Path) -> list[str]:
    """The names of the functions defined at the top of the module `path`."""
    return [node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)]
