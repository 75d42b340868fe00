"""The shape of the package: one import package `redfirst`, its imports flowing one way
(shared -> leases -> gates -> mutations; checkers on the shared layer alone), no import circle,
no module over 700 lines. The graph is read from the source (every import statement, those
inside functions and under TYPE_CHECKING too), so a lazy import cannot hide a circle."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "redfirst"
MAX_LINES = 700

# What each layer may import (a module of the shared layer sits in `redfirst/` itself).
ALLOWED: dict[str, frozenset[str]] = {
    "shared": frozenset({"shared"}),
    "leases": frozenset({"shared", "leases"}),
    "gates": frozenset({"shared", "leases", "gates"}),
    "mutations": frozenset({"shared", "leases", "gates", "mutations"}),
    "checkers": frozenset({"shared", "checkers"}),
}


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package folder, by dotted name."""
    found = {}
    for file in sorted(package.rglob("*.py")):
        parts = file.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(package: Path) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line of the first such import}, within the package."""
    known = modules(package)
    graph: dict[str, dict[str, int]] = {}
    for name, file in known.items():
        edges: dict[str, int] = {}
        here = name if file.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            targets: Iterable[str] = ()
            if isinstance(node, ast.Import):
                targets = (a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                # `from a.b import c` imports module a.b.c where it is one, else a name of a.b
                targets = (f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
            for target in targets:
                owner = _owner(target, known)
                if owner is not None and owner != name:
                    edges.setdefault(owner, node.lineno)
        graph[name] = edges
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Each strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


PARTS = ("gates", "mutations", "leases", "checkers")


def layer(module: str) -> str:
    """The part a module belongs to, or "shared" for a module of `redfirst` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PARTS else "shared"


def against_the_flow(graph: dict[str, dict[str, int]], files: dict[str, Path]) -> list[str]:
    top = files["redfirst"].parent.parent
    return [f"{files[m].relative_to(top).as_posix()}:{line}: {layer(m)} imports {target} ({layer(target)})"
            for m, edges in sorted(graph.items()) for target, line in sorted(edges.items())
            if layer(target) not in ALLOWED[layer(m)]]


def test_the_package_has_no_import_circle():
    found = circles(import_graph(PACKAGE))
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_imports_flow_shared_leases_gates_mutations_and_checkers_stand_alone():
    files = modules(PACKAGE)
    found = against_the_flow(import_graph(PACKAGE), files)
    assert not found, "imports against the flow (shared -> leases -> gates -> mutations; checkers alone):\n" \
        + "\n".join(found)


def test_the_four_parts_and_the_shared_layer_are_where_the_flow_says():
    files = modules(PACKAGE)
    assert {layer(m) for m in files} == set(ALLOWED)
    assert layer("redfirst") == layer("redfirst.verdict") == layer("redfirst.yamlsrc") == "shared"
    assert layer("redfirst.gates") == layer("redfirst.gates.cuda.rt") == "gates"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "redfirst" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "redfirst"


def test_a_circle_through_a_lazy_import_is_found(tmp_path: Path):
    # The circle issue 32 found: a shared module importing a command inside a function.
    package = _package(tmp_path, {
        "__init__.py": "", "clitools.py": "def f():\n    from redfirst.gates import cli\n",
        "gates/__init__.py": "", "gates/cli.py": "from redfirst import clitools\n"})
    assert circles(import_graph(package)) == [["redfirst.clitools", "redfirst.gates.cli"]]


def test_an_import_against_the_flow_is_named_with_file_and_line(tmp_path: Path):
    package = _package(tmp_path, {
        "__init__.py": "", "verdict.py": "",
        "leases/__init__.py": "", "leases/cli.py": "import os\n\nfrom redfirst.gates import clitools\n",
        "gates/__init__.py": "", "gates/clitools.py": "from ..verdict import x\n",
        "checkers/__init__.py": "", "checkers/cli.py": "if 1:\n    from redfirst.mutations import run\n",
        "mutations/__init__.py": "", "mutations/run.py": "from redfirst.leases import cli\n"})
    found = against_the_flow(import_graph(package), modules(package))
    assert found == ["redfirst/checkers/cli.py:2: checkers imports redfirst.mutations.run (mutations)",
                     "redfirst/leases/cli.py:3: leases imports redfirst.gates.clitools (gates)"]


def _python_files() -> list[Path]:
    return sorted(p for folder in ("redfirst", "tests", "bench", "examples", "selftest")
                  for p in (REPO / folder).rglob("*.py") if "build" not in p.relative_to(REPO).parts)


def test_no_module_of_the_project_is_over_700_lines():
    files = _python_files()
    assert len(files) > 100
    long = [f"{p.relative_to(REPO)}: {n} lines" for p in files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, f"modules over {MAX_LINES} lines (split them along their concerns):\n" + "\n".join(long)


@pytest.mark.parametrize("name", ["gates", "mutations", "leases", "checkers"])
def test_no_part_is_a_top_level_package(name: str):
    assert not (REPO / name).exists(), f"{name}/ at the top of the repository: it is redfirst.{name}"
    assert (PACKAGE / name / "__init__.py").is_file()
