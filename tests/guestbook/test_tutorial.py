"""The tutorial works as written: its own letter is sent, and what it quotes of the code is in the code.

docs/tutorial.md holds three kinds of code block, told apart by their first line:
  # guestbook/notices.py            a file the reader makes; "..., continued" adds to it
  # from guestbook/auth.py          an excerpt, which must appear as it is in that file
  anything else                     a change to make by hand, not run here
The files are made from the blocks: the module is loaded as guestbook.notices, and
each test of the test file runs here, with the fixtures it names, as pytest would.
"""

import ast
import inspect
import linecache
import re
import sys
import textwrap
import types
from pathlib import Path

import pytest

import guestbook

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
MODULE, TESTS = "guestbook/notices.py", "tests/guestbook/test_notices.py"  # the files the reader makes
BLOCK = re.compile(r"^```(?:python|sql)\n(.*?)^```", re.S | re.M)
HEADER = re.compile(r"(?:#|--) (?:(?P<excerpt>from) )?(?P<path>[\w/.]+)(?P<continued>, continued)?$")


def blocks() -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The tutorial's files, path to source, and its excerpts, as (path, text)."""
    files: dict[str, str] = {}
    excerpts: list[tuple[str, str]] = []
    for block in BLOCK.findall(TUTORIAL.read_text()):
        first, _, rest = block.partition("\n")
        header = HEADER.fullmatch(first)
        if header is None:
            continue
        if header["excerpt"]:
            excerpts.append((header["path"], rest))
        elif header["continued"]:
            files[header["path"]] += "\n\n" + rest
        else:
            files[header["path"]] = rest
    return files, excerpts


FILES, EXCERPTS = blocks()
TEST_NAMES = [
    node.name
    for node in ast.parse(FILES[TESTS]).body
    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
]


def loaded(name: str, path: str, package: str) -> types.ModuleType:
    """The tutorial's file `path`, run as module `name` of `package`."""
    module = types.ModuleType(name)
    module.__package__ = package
    filename = f"{TUTORIAL.name}: {path}"
    linecache.cache[filename] = (len(FILES[path]), None, FILES[path].splitlines(True), filename)  # for tracebacks
    exec(compile(FILES[path], filename, "exec"), module.__dict__)
    return module


@pytest.fixture
def tutorial_tests(monkeypatch) -> types.ModuleType:
    """The tutorial's test file, importing the tutorial's guestbook.notices."""
    notices = loaded("guestbook.notices", MODULE, "guestbook")
    monkeypatch.setitem(sys.modules, "guestbook.notices", notices)
    monkeypatch.setattr(guestbook, "notices", notices, raising=False)
    return loaded("tests.guestbook.test_notices", TESTS, "tests.guestbook")


def test_the_tutorial_makes_its_module_and_two_tests():
    assert set(FILES) == {MODULE, TESTS} and len(TEST_NAMES) == 2 and EXCERPTS


@pytest.mark.slow
@pytest.mark.parametrize("name", TEST_NAMES)
def test_the_tutorial_s_test_passes(name, tutorial_tests, request):
    test = getattr(tutorial_tests, name)
    test(**{fixture: request.getfixturevalue(fixture) for fixture in inspect.signature(test).parameters})


@pytest.mark.parametrize(("path", "excerpt"), EXCERPTS, ids=[path for path, _ in EXCERPTS])
def test_what_the_tutorial_quotes_is_in_the_code(path, excerpt):
    quoted = textwrap.dedent(excerpt).splitlines()
    lines = (ROOT / path).read_text().splitlines()
    windows = (textwrap.dedent("\n".join(lines[at : at + len(quoted)])).splitlines() for at in range(len(lines)))
    assert quoted in windows, f"the tutorial quotes lines that {path} no longer holds:\n{excerpt}"
