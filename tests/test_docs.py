"""The documents stay true to the tree and to the code.

Every relative link in a Markdown file names a file or folder that exists, and every
`#anchor` a heading of its target as GitHub makes them. Every constant a document
quotes with a value, as "`LOCK_AFTER` (10)" or "`POLL_INTERVAL`, 1 s", still has that
value where the code defines it, so prose and code cannot drift apart unnoticed. Every
test a document cites by name (`test_...`) exists, unless the document's own code defines it.
"""

import ast
import functools
import importlib
import re
import textwrap
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {".venv", ".git", ".pytest_cache", "test-results", ".pgdata", "outbox", "node_modules"}
PACKAGES = ("jobs", "mail", "guestbook", "e2e")  # where the constants the documents quote are defined
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
TEST_NAME = re.compile(r"\btest_\w+")  # a test module or function a document cites
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
# A quoted value: "`NAME` (3 days)", "`NAME` (an hour)", "`NAME`, 64 KiB", or "its /64 network (`NAME`)".
AMOUNT = r"(?P<amount>an?|\d+(?:,\d{3})*(?:\.\d+)?)(?: (?P<unit>[A-Za-z]+))?"
NAME = r"`(?P<name>[A-Z][A-Z0-9_]{2,})`"
QUOTES = (re.compile(rf"{NAME}(?: \(|, ){AMOUNT}"), re.compile(rf"(?<![\w.]){AMOUNT} \({NAME}\)"))
SECONDS = {
    "ms": 0.001,
    "s": 1,
    "second": 1,
    "seconds": 1,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "day": 86400,
    "days": 86400,
    "week": 604800,
    "weeks": 604800,
    "year": 365 * 86400,
}
BYTES = {"KiB": 1024, "MiB": 1024**2}


def documents() -> list[Path]:
    """Every Markdown file of the project, outside the folders that tools make."""
    return sorted(
        path
        for path in ROOT.rglob("*.md")
        if not SKIPPED.intersection(path.relative_to(ROOT).parts) and ".egg-info" not in str(path)
    )


def prose(text: str) -> str:
    """The text without its fenced code blocks, where a link or a heading is only an example."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file: one per heading (a repeated one gets -1, -2, ...), and HTML ones."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = prose(path.read_text())
    for heading in HEADING.findall(text):
        base = slug(heading)
        found.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return found | set(HTML_ANCHOR.findall(text))


def broken_links(path: Path) -> list[str]:
    """The relative links and anchors of `path` that lead nowhere, each said with what is missing."""
    text = CODE.sub("", prose(path.read_text()))
    broken = []
    for target in LINK.findall(text) + REFERENCE.findall(text):
        if re.match(r"[a-z][a-z+.-]*:", target):
            continue  # https:, mailto: and the like: not ours to check here
        name, _, anchor = unquote(target).partition("#")
        file = (path.parent / name).resolve() if name else path
        if not file.exists():
            broken.append(f"{target}: no {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {file.relative_to(ROOT)}")
    return broken


@functools.cache
def assignments() -> dict[str, list[tuple[str, str, str]]]:
    """Each name given a value at the top of a module of the packages: (package, module, the line's comment)."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    for package in PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            lines = source.read_text().splitlines()
            module = ".".join(source.relative_to(ROOT).with_suffix("").parts)
            for node in ast.parse("\n".join(lines)).body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                for target in targets:
                    if isinstance(target, ast.Name):
                        comment = lines[node.lineno - 1].partition("#")[2].strip()
                        found.setdefault(target.id, []).append((package, module, comment))
    return found


def definitions(name: str, document: Path) -> list[tuple[str, object, str]]:
    """(module, value, comment) of each module-level `name = ...`: the document's own package's, else all."""
    found = assignments().get(name, [])
    own = [place for place in found if place[0] == document.relative_to(ROOT).parts[0]]
    return [(module, getattr(importlib.import_module(module), name), comment) for _, module, comment in own or found]


@functools.cache
def read_from_environment(name: str) -> bool:
    """Whether `name` is a setting the code reads from the environment rather than a constant."""
    return any(f'"{name}"' in source.read_text() for package in PACKAGES for source in (ROOT / package).rglob("*.py"))


def quoted(amount: str, unit: str | None) -> tuple[float, str] | None:
    """What a quote says, as (number, kind): seconds for a time, bytes for a size; None if it is no quantity."""
    number = 1.0 if amount in ("a", "an") else float(amount.replace(",", ""))
    if unit in SECONDS:
        return number * SECONDS[unit], "seconds"
    if unit in BYTES:
        return number * BYTES[unit], "bytes"
    return None if amount in ("a", "an") else (number, "number")


def in_code(value: object, comment: str, kind: str) -> float | None:
    """The code's value in the kind a quote speaks of: a timedelta or "ms" in its comment are turned to seconds."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if kind == "seconds" and re.match(r"(ms|milliseconds)\b", comment):
        return value / 1000
    return float(value)


def drifted(path: Path) -> list[str]:
    """The constants `path` quotes with a value the code no longer gives them, each said with both values."""
    drift = []
    text = prose(path.read_text())
    for match in (match for pattern in QUOTES for match in pattern.finditer(text)):
        name, said = match["name"], quoted(match["amount"], match["unit"])
        if said is None:
            continue
        found = definitions(name, path)
        if not found:
            if not read_from_environment(name):
                drift.append(f"{name} ({match[0]}): defined nowhere in {', '.join(PACKAGES)}")
            continue
        if not any(in_code(value, comment, said[1]) == pytest.approx(said[0]) for _, value, comment in found):
            values = "; ".join(f"{module}.{name} = {value!r}  # {comment}" for module, value, comment in found)
            drift.append(f"{name}: the document says {match[0]!r}, the code {values}")
    return drift


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("The claim, the lease and the heartbeat", "the-claim-the-lease-and-the-heartbeat"),
        ("Behind PgBouncer in transaction mode", "behind-pgbouncer-in-transaction-mode"),
        ("`jobs.later(db, queue, name, args)`", "jobslaterdb-queue-name-args"),
        ("Chains & batches", "chains--batches"),
        ("What an attacker can try: [the list](x.md)", "what-an-attacker-can-try-the-list"),
        ("Step 3 — break the mail server", "step-3--break-the-mail-server"),
        ("max_wait_ms and LOCK_AFTER", "max_wait_ms-and-lock_after"),
    ],
)
def test_a_heading_s_anchor_is_made_as_github_makes_it(heading, anchor):
    assert slug(heading) == anchor


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(document):
    broken = broken_links(document)
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_quoted_constant_has_its_value_in_the_code(document):
    drift = drifted(document)
    assert not drift, "constants the document quotes otherwise than the code:\n" + "\n".join(drift)


@functools.cache
def project_tests() -> frozenset[str]:
    """The names of every test module and test function of the project: what a document may cite."""
    names = set()
    for folder in ("tests", "e2e"):
        for source in (ROOT / folder).rglob("*.py"):
            names.add(source.stem)
            tree = ast.parse(source.read_text())
            names.update(
                node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return frozenset(names)


def missing_tests(path: Path) -> list[str]:
    """The tests `path` cites by name that exist nowhere, neither in the tests nor in the document's own code."""
    text = path.read_text()
    own = set(TEST_NAME.findall("\n".join(block[0] for block in FENCE.finditer(text))))
    return sorted({name for name in TEST_NAME.findall(text) if name not in project_tests() and name not in own})


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_test_a_document_cites_exists(document):
    missing = missing_tests(document)
    assert not missing, "tests the document cites that do not exist:\n" + "\n".join(missing)


def test_a_renamed_test_is_found_missing(tmp_path):
    document = tmp_path / "cites.md"
    document.write_text("Shown by `test_a_sign_in_that_no_test_has_ever_had`, and by `test_docs`.\n")
    assert missing_tests(document) == ["test_a_sign_in_that_no_test_has_ever_had"]


def test_the_manual_s_deploying_table_lists_every_step_of_the_schema():
    from jobs.store.schema import STEPS

    manual = (ROOT / "jobs" / "README.md").read_text()
    deploying = manual.partition("## Deploying")[2].partition("\n## ")[0]
    listed = [int(number) for number in re.findall(r"^\| (\d+) \|", deploying, re.M)]
    assert listed == sorted(STEPS), "the steps jobs/README.md's Deploying lists, and those of jobs/store/schema.sql"


# A document's code block whose first line is "# from PATH" (or "-- from PATH") quotes that
# file, and must appear in it as it is (indentation aside); tests/guestbook/test_tutorial.py
# checks docs/tutorial.md's, whose other blocks make files of their own.
QUOTING = [ROOT / "jobs" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
EXCERPT = re.compile(r"^```(?:python|sql)\n(?:#|--) from (?P<path>[\w/.]+)\n(?P<text>.*?)^```", re.S | re.M)


def excerpts() -> list[tuple[str, str, str]]:
    """(document, quoted path, quoted text) of every excerpt of the documents in QUOTING."""
    return [
        (str(document.relative_to(ROOT)), match["path"], match["text"])
        for document in QUOTING
        for match in EXCERPT.finditer(document.read_text())
    ]


def quotes(path: str, excerpt: str) -> bool:
    """Whether the file `path` holds the lines of `excerpt`, dedented alike."""
    quoted = textwrap.dedent(excerpt).splitlines()
    lines = (ROOT / path).read_text().splitlines()
    windows = (textwrap.dedent("\n".join(lines[at : at + len(quoted)])).splitlines() for at in range(len(lines)))
    return quoted in windows


@pytest.mark.parametrize(("document", "path", "excerpt"), excerpts(), ids=lambda value: str(value)[:40])
def test_what_a_document_quotes_is_in_the_code(document, path, excerpt):
    assert quotes(path, excerpt), f"{document} quotes lines that {path} no longer holds:\n{excerpt}"


def test_the_manual_quotes_the_guestbook_s_mounting_of_the_dashboard():
    assert ("jobs/README.md", "guestbook/dashboard.py") in [(document, path) for document, path, _ in excerpts()]


@pytest.mark.parametrize("document", QUOTING, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_python_block_of_a_document_is_python(document):
    for block in PYTHON_BLOCK.findall(document.read_text()):
        first, _, rest = block.partition("\n")
        ast.parse(textwrap.dedent(rest if first.startswith("# from ") else block))  # a SyntaxError names the line


# Every code block of the README, docs/ and the manual says on its first line what becomes of it:
#   # from PATH   (-- in SQL)               an excerpt of PATH, checked above to be in it
#   # PATH, # PATH, continued, --- a/PATH   a file the reader makes, or a change to one: RUN_BY's test runs it
#   # not run: REASON   (-- in SQL, %% in a diagram)   neither, and why not
SHOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "jobs" / "README.md"]
RUN_BY = {  # a document's own test, with the first lines of the blocks it runs
    "docs/tutorial.md": ("tests/guestbook/test_tutorial.py", re.compile(r"# [\w/]+\.py(?:, continued)?|--- a/[\w/.]+")),
    "jobs/README.md": ("tests/jobs/test_manual.py", re.compile(r"# (?:quickstart|dashboard)\.py")),
    "docs/operations.md": (
        "tests/guestbook/test_deploy_recipe.py",
        re.compile(r"# (?:install|start), as root, .+|# /etc/[\w/.-]+"),
    ),
}
MARKED = re.compile(r"(?:#|--|%%) (?:from [\w/.]+|not run: \w.{9,})")
FENCE_OPENS = re.compile(r"^(```|~~~)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")


def code_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, first line) of each code block of a Markdown text: fenced, or indented outside a list."""
    lines = text.splitlines()
    found: list[tuple[int, str]] = []
    fence, indented, in_list, after_blank = "", False, False, True
    for number, line in enumerate(lines, 1):
        if fence:
            fence = "" if line.startswith(fence) else fence
        elif opened := FENCE_OPENS.match(line):
            fence = opened[1]
            found.append((number, lines[number] if number < len(lines) else ""))
        elif line.startswith("    ") and (indented or (after_blank and not in_list)):
            found += [] if indented else [(number, line[4:])]
            indented = True
        elif line.strip():
            indented, in_list = False, bool(LIST_ITEM.match(line)) or (in_list and line.startswith(" "))
        after_blank = not line.strip()
    return found


def unmarked(document: Path) -> list[str]:
    """The code blocks of `document` that no test runs and that do not say why, each with its line number."""
    runs = RUN_BY.get(str(document.relative_to(ROOT)))
    return [
        f"line {number}: {first!r}"
        for number, first in code_blocks(document.read_text())
        if not MARKED.fullmatch(first) and not (runs and runs[1].fullmatch(first))
    ]


def test_code_blocks_are_found_fenced_or_indented_but_not_in_a_list():
    text = "Run:\n\n    make run\n    make test\n\n- an item\n\n    its second paragraph\n\n```sh\n# not run: x\n```\n"
    assert code_blocks(text) == [(3, "make run"), (10, "# not run: x")]


@pytest.mark.parametrize("document", SHOWN, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_code_block_is_run_by_a_test_or_says_why_not(document):
    left = unmarked(document)
    assert not left, "code blocks no test runs, whose first line says not `# not run: REASON`:\n" + "\n".join(left)


MANUAL = ROOT / "jobs" / "README.md"
CONTENTS_LINK = re.compile(r"^\s*- \[[^\]]+\]\(#([^)]+)\)$", re.M)
# A path the manual cites outside jobs/: a file, or a folder ending in /.
CITED = re.compile(r"(?<![\w/.])(?:\.\./)?((?:tests|examples|docs|guestbook|mail|e2e)/(?:[\w/.-]*\w)?/?)")


def section(text: str, heading: str) -> str:
    """The body of the `## ` section `heading` of a Markdown text, up to the next one."""
    return text.partition(f"\n## {heading}\n")[2].partition("\n## ")[0]


def test_the_manual_opens_with_its_contents_each_leading_to_a_heading():
    text = MANUAL.read_text()
    listed = CONTENTS_LINK.findall(section(text, "Contents"))
    sections = [slug(heading) for heading in re.findall(r"^## (.+)$", prose(text), re.M) if heading != "Contents"]
    assert text.index("\n## ") == text.index("\n## Contents\n"), "the contents come before every other section"
    assert not set(listed) - anchors(MANUAL), "entries of the contents that lead to no heading"
    assert [anchor for anchor in listed if anchor in sections] == sections, "the contents list every section, in order"


def test_the_manual_says_that_each_file_it_cites_outside_its_folder_stays_behind():
    text = MANUAL.read_text()
    named = CITED.findall(section(text, "Copying jobs into your app"))
    left = sorted({path for path in CITED.findall(text) if not any(path.startswith(place) for place in named)})
    assert not left, "files the manual cites outside jobs/ that its section on copying names not:\n" + "\n".join(left)
