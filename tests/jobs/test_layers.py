"""jobs/ is built in layers, each folder importing only the ones below it: core/ the ground, store/ the
statements, runtime/ the worker's machinery, cli/ and web/ on top, and the face (jobs/__init__.py)
that only jobs/__main__.py and the apps import. Read from each module's imports, without running it."""

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
JOBS = PROJECT / "jobs"
# What each folder may not import, of jobs: core/ nothing but core/, no layer what sits above it, and
# neither face of the queue the other, so a copy may leave out web/, cli/ or both.
FORBIDDEN = {
    "core": {"store", "runtime", "cli", "web"},
    "store": {"runtime", "cli", "web"},
    "runtime": {"cli", "web"},
    "cli": {"web"},
    "web": {"cli"},
}
FACE_IMPORTERS = {"jobs/__init__.py", "jobs/__main__.py"}  # the only modules that import the face


def imported(path: Path) -> set[str]:
    """The modules of jobs that one module imports, as dotted names, types-only imports included."""
    package = path.relative_to(PROJECT).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(part for part in (base, node.module or "") if part)
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}  # a name may be a module
    return {name for name in names if name == "jobs" or name.startswith("jobs.")}


def crossings(path: Path) -> list[str]:
    """The imports of one module that break the layers, each said as 'module imports jobs.FOLDER'."""
    where = path.relative_to(PROJECT).as_posix()
    layer = path.relative_to(JOBS).parts[0] if path.parent != JOBS else None
    wrong = set()
    for name in imported(path):
        parts = name.split(".")
        if name == "jobs" and where not in FACE_IMPORTERS:
            wrong.add(f"{where} imports the face, jobs")
        elif len(parts) > 1 and layer in FORBIDDEN and parts[1] in FORBIDDEN[layer]:
            wrong.add(f"{where} imports jobs.{parts[1]}")
    return sorted(wrong)


def test_each_layer_imports_only_the_layers_below_it_and_nothing_imports_the_face():
    modules = sorted(JOBS.rglob("*.py"))
    assert {"core", "store", "runtime", "cli", "web"} <= {path.parent.name for path in modules}
    assert [wrong for path in modules for wrong in crossings(path)] == []
