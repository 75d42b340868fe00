"""What `mutate sweep` keeps between sweeps: mutmut's `mutants/` folder (its verdict on each
mutant, a hash of each function, its map of tests to functions) in the repository's cache,
with what those verdicts rest on (`Basis`).

mutmut 3.8.1 skips unchanged functions by itself: it regenerates the mutants of a source
file newer than its copy under `mutants/`, compares each function's hash (the sha256 of its
AST) with the one in `mutants/<file>.meta`, and keeps the exit code of every mutant of an
unchanged function. It does not look at the tests, the other files, the code between the
functions, or what an unchanged function calls. So the kept folder is handed to it only
while the rest holds: the same mutmut, Python and configuration, the same files mutated,
every other file of the tree unchanged (a weakened test, a changed helper or data file:
nothing is reused), and in the mutated files the same code outside the functions. Within
them, a mutant of an unchanged function is run again (its verdict cleared) when a test
that reached it also reached a changed function, when it names a changed function
(directly or through the other functions of those files), or when a changed function names
it (directly or through others: a test may now reach it); mutmut's test map is then
collected afresh.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst.gates.treekey import TreeState
from redfirst.mutations.paths import repo_cache
from redfirst.yamlsrc import YamlError, load_json, load_json_object

MUTANTS = "mutants"
STATS = "mutmut-stats.json"


@dataclass(frozen=True)
class Basis:
    """What a sweep's mutmut verdicts rest on besides the mutated functions themselves."""

    mutmut: str
    python: str
    config: str                       # sha256 of the configuration mutmut read (setup.cfg, pyproject.toml)
    files: tuple[str, ...]            # the files mutated, relative to the root
    rest: str                         # digest of every other file of the tree
    sources: Mapping[str, str]        # each mutated file's text

    def holds_apart_from_functions(self, now: Basis) -> bool:
        return (dataclasses.replace(self, sources={}) == dataclasses.replace(now, sources={})
                and all(skeleton(self.sources.get(f, "")) == skeleton(now.sources[f]) for f in now.files))


def basis(root: Path, scratch: Path, files: Iterable[str], version: str) -> Basis:
    mutated = tuple(sorted(files))
    tree = TreeState.of(root, (root / ".redfirst", root / MUTANTS))
    rest = TreeState(root, {rel: blob for rel, blob in tree.entries.items() if rel not in mutated})
    config = hashlib.sha256()
    for name in ("setup.cfg", "pyproject.toml"):
        path = scratch / name
        config.update(path.read_bytes() if path.is_file() else b"-")
        config.update(b"\0")
    return Basis(version, sys.version, config.hexdigest(), mutated, rest.digest,
                 {f: (root / f).read_text(encoding="utf-8", errors="surrogateescape") for f in mutated})


def _functions(source: str) -> dict[str, ast.AST]:
    """mutmut's mangled name (x_f, xǁClassǁmethod) -> the function's node, as mutmut hashes them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    found: dict[str, ast.AST] = {}

    def visit(body: list[ast.stmt], cls: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found[f"xǁ{cls}ǁ{node.name}" if cls else f"x_{node.name}"] = node
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{cls}.{node.name}" if cls else node.name)

    visit(tree.body, "")
    return found


def skeleton(source: str) -> str:
    """The file's code outside its functions (each function a placeholder naming it): a change
    there (a constant, an import, a class attribute) can change what any function does."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "unparsable:" + hashlib.sha256(source.encode("utf-8", errors="surrogateescape")).hexdigest()
    tree = copy.deepcopy(tree)

    def strip(body: list[ast.stmt]) -> None:
        for i, node in enumerate(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body[i] = ast.Expr(ast.Constant(node.name))
            elif isinstance(node, ast.ClassDef):
                strip(node.body)

    strip(tree.body)
    return ast.dump(tree)


def module_of(rel: str) -> str:
    """mutmut's module name of a source file (its get_mutant_name): dots for folders, no `src.`."""
    name = rel[: -len(".py")].replace(os.sep, ".").replace("/", ".")
    name = name.removeprefix("src.")
    return name.removesuffix(".__init__")


def _changed(old: Basis, now: Basis) -> set[str]:
    """Qualified names (module.mangled) of the functions added, removed or edited."""
    changed = set()
    for f in now.files:
        before, after = _functions(old.sources.get(f, "")), _functions(now.sources[f])
        for name in before.keys() | after.keys():
            if name not in before or name not in after or ast.dump(before[name]) != ast.dump(after[name]):
                changed.add(f"{module_of(f)}.{name}")
    return changed


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def _simple(qualified: str) -> str:
    return qualified.rpartition(".")[2].rpartition("ǁ")[2].removeprefix("x_")


def to_run_again(now: Basis, changed: set[str], tests: Mapping[str, Iterable[str]]) -> set[str]:
    """The functions (module.mangled) whose mutants' kept verdicts cannot stand: the changed ones,
    those a test that reached a changed function reached too, those that name a changed
    function, directly or through other functions of the mutated files, and those a changed
    function names now, directly or through others (a test may reach them by a new path: a
    mutant no test reached, kept as survived, may now be killed)."""
    touched = {t for c in changed for t in tests.get(c, ())}
    again = set(changed) | {f for f, reached in tests.items() if touched.intersection(reached)}
    bodies = {f"{module_of(f)}.{name}": node for f in now.files for name, node in _functions(now.sources[f]).items()}
    names = {q: _names(node) for q, node in bodies.items()}
    while True:
        simple = {_simple(q) for q in again}
        more = {q for q, used in names.items() if q not in again and used & simple}
        if not more:
            break
        again |= more
    called = {q for q in changed if q in names}
    while True:
        used = set().union(*(names[q] for q in called))
        more = {q for q in names if q not in called and _simple(q) in used}
        if not more:
            return again | called
        called |= more


def _folder(root: Path) -> Path:
    return repo_cache(root, "sweeps")


def _load_basis(file: Path) -> Basis | None:
    try:
        data = load_json_object(file)
        if data is None:
            return None
        return Basis(data["mutmut"], data["python"], data["config"], tuple(data["files"]), data["rest"],
                     dict(data["sources"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def restore(root: Path, scratch: Path, now: Basis) -> dict[str, str]:
    """Lay the kept `mutants/` folder into the scratch copy where its verdicts can stand, with
    the verdicts of the functions `to_run_again` cleared. Returns the mutants it brings with a
    verdict (key -> its function's hash in mutmut's meta), for counting what mutmut reused."""
    kept = _folder(root) / MUTANTS
    old = _load_basis(_folder(root) / "basis.json")
    if old is None or not kept.is_dir() or not old.holds_apart_from_functions(now):
        return {}
    target = scratch / MUTANTS
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(kept, target, symlinks=True)
    for f in now.files:
        # mutmut keeps a file's mutants as they are while its copy is newer than the source: make
        # it older, so the mutants are made from the source as it is now and their hashes compared.
        with contextlib.suppress(OSError):
            os.utime(target / f, (0, 0))
    changed = _changed(old, now)
    again: set[str] = set()
    if changed:
        stats = _read_json(target / STATS)
        tests = stats.get("tests_by_mangled_function_name", {}) if isinstance(stats, dict) else {}
        again = to_run_again(now, changed, tests if isinstance(tests, dict) else {})
        # Which tests reach which function may have changed with them: mutmut collects it anew.
        (target / STATS).unlink(missing_ok=True)
    carried: dict[str, str] = {}
    for f in now.files:
        meta_file = target / f"{f}.meta"
        meta = _read_json(meta_file)
        if not isinstance(meta, dict) or not isinstance(meta.get("exit_code_by_key"), dict):
            continue
        codes, hashes = meta["exit_code_by_key"], meta.get("hash_by_function_name") or {}
        for key in codes:
            function = key.partition("__mutmut_")[0]
            if function in again:
                codes[key] = None
            elif codes[key] is not None:
                carried[key] = str(hashes.get(_unqualified(function, f)))
        meta_file.write_text(json.dumps(meta, indent=4), encoding="utf-8")
    return carried


def reused(scratch: Path, carried: Mapping[str, str], files: Iterable[str]) -> int:
    """How many mutants mutmut kept a carried verdict for: its function's hash unchanged."""
    count = 0
    for f in files:
        meta = _read_json(scratch / MUTANTS / f"{f}.meta")
        if not isinstance(meta, dict):
            continue
        hashes = meta.get("hash_by_function_name") or {}
        for key, code in (meta.get("exit_code_by_key") or {}).items():
            function = _unqualified(key.partition("__mutmut_")[0], f)
            if key in carried and code is not None and str(hashes.get(function)) == carried[key]:
                count += 1
    return count


def _unqualified(function: str, rel: str) -> str:
    """`calc.x_add` -> `x_add` (a nested class's method keeps its dots: xǁOuter.Innerǁm)."""
    module = module_of(rel) + "."
    return function[len(module):] if function.startswith(module) else function.rpartition(".")[2]


def keep(root: Path, scratch: Path, now: Basis) -> None:
    """After a finished mutmut run: its `mutants/` folder and what it rests on, for the next sweep."""
    folder = _folder(root)
    folder.mkdir(parents=True, exist_ok=True)
    fresh = folder / f"{MUTANTS}.{os.getpid()}"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(scratch / MUTANTS, fresh, symlinks=True)
    shutil.rmtree(folder / MUTANTS, ignore_errors=True)
    os.replace(fresh, folder / MUTANTS)
    tmp = folder / f"basis.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(dataclasses.asdict(now)), encoding="utf-8")
    os.replace(tmp, folder / "basis.json")


def _read_json(path: Path) -> Any:
    try:
        return load_json(path)
    except YamlError:
        return None
