"""`mutate sweep`: mutmut over the Python files a change touches (or every line of given paths,
or of the configured package), reduced to the survivors worth a person's time: on changed
lines, at most one per line, no logging calls, no message strings. The survivors are kept for
`mutate promote`."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from redfirst.gates.drivers import runs_pytest_targets
from redfirst.gates.model import Gate
from redfirst.mutations import git, mutmut, sweep_cache
from redfirst.mutations.mutmut import Survivor
from redfirst.mutations.paths import repo_cache
from redfirst.mutations.workspaces.worktree import Worktree
from redfirst.yamlsrc import YamlError, load_json_object, load_toml_text, read_text


class SweepScopeError(Exception):
    """What to sweep cannot be told: a path missing or outside the root, no package configured."""


@dataclass(frozen=True)
class SweepResult:
    files: tuple[str, ...]             # the changed Python files mutmut was limited to
    mutants: int                       # mutants mutmut ran on them
    survivors: tuple[Survivor, ...]    # after the reductions
    suppressed: int                    # survivors dropped: off the change, duplicates, logging, messages
    # mutants on changed lines mutmut gave no verdict on, by mutmut's status: never kills
    undecided: tuple[tuple[str, int], ...] = ()
    reused: int = 0                    # mutants whose verdict mutmut kept from the last sweep (sweep_cache)


def is_test_file(rel: str) -> bool:
    """pytest's default test files (`test_*.py`, `*_test.py`, conftest.py), unittest's and Django's
    test modules (`tests.py`, `test.py`), GoogleTest's and Catch2's `*_test.cc` convention, and
    anything under a `tests/` or `test/` folder."""
    p = PurePosixPath(rel)
    return (p.name.startswith("test_") or p.stem.endswith("_test")
            or p.name in ("conftest.py", "tests.py", "test.py")
            or any(part in ("tests", "test") for part in p.parts[:-1]))


def mutable_place(rel: str) -> bool:
    """Whether a sweep may mutate the file at `rel` (relative to the root) for where it lies: not a
    test (is_test_file), not under mutmut's own `mutants/` folder (what a user's own `mutmut run`
    leaves). Every way of choosing what to sweep (a change, paths, the configured package), in
    every language, goes through here: a caller may rely on a sweep never mutating a test or
    mutmut's copy of the project."""
    return PurePosixPath(rel).parts[:1] != (sweep_cache.MUTANTS,) and not is_test_file(rel)


def is_python_source(rel: str) -> bool:
    return rel.endswith(".py")


def swept_source(rel: str) -> bool:
    """A Python file a sweep may mutate (mutable_place)."""
    return is_python_source(rel) and mutable_place(rel)


def changed_lines(root: Path, since: str, wanted: Callable[[str], bool] = is_python_source) -> dict[str, set[int]]:
    """Changed source files that `wanted` keeps (Python's by default) and mutable_place allows,
    relative to the root -> changed line numbers."""
    top = git.toplevel(root)
    rel_root = root.resolve().relative_to(top)
    out: dict[str, set[int]] = {}
    sha = git.resolve_commit(top, since, "--since")
    diff = git.git(top, "diff", "-U0", "--no-color", "--no-ext-diff", "--end-of-options", sha, "--",
                   str(rel_root) or ".")
    current: str | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            current = name[2:] if name.startswith("b/") else None
        elif line.startswith("@@") and current is not None:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
            if m and int(m.group(2) or 1) > 0:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                out.setdefault(current, set()).update(range(start, start + count))
    for rel in git.z_list(top, "ls-files", "--others", "--exclude-standard", "--", str(rel_root) or "."):
        if wanted(rel) and sweepable(top, rel, root) is not None:
            n = len((top / rel).read_text(encoding="utf-8", errors="replace").splitlines())
            out[rel] = set(range(1, n + 1))
    found: dict[str, set[int]] = {}
    for rel, lines in out.items():
        inside = sweepable(top, rel, root)
        if inside is not None and wanted(inside):
            found[inside] = lines
    return found


def sweepable(top: Path, rel: str, root: Path) -> str | None:
    """The path relative to `root` of the file `rel` (relative to the repository's `top`) that a
    sweep may mutate, or None. A caller may rely on: a path only for a regular file, no symbolic
    link (its text may lie outside the root, or be a test under another name), lying inside the
    root, that mutable_place allows; every way of choosing files (a change, paths, the package)
    goes through here."""
    file = top / rel
    if file.is_symlink() or not file.is_file():
        return None
    try:
        inside = file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    return inside if mutable_place(inside) else None


def whole_files(root: Path, paths: Sequence[Path]) -> dict[str, set[int]]:
    """Every Python source file under `paths` (files or folders, tracked or untracked and not
    ignored) -> all its lines, as if each were new. SweepScopeError names a path that does not
    exist or lies outside the root."""
    top = git.toplevel(root)
    inner = root.resolve()
    targets: list[str] = []
    for given in paths:
        path = given.resolve()
        if not path.exists():
            raise SweepScopeError(f"{given}: does not exist")
        if path != inner and inner not in path.parents:
            raise SweepScopeError(f"{given}: outside the project root {root}")
        targets.append(str(path.relative_to(top)) or ".")
    found: dict[str, set[int]] = {}
    for rel in git.z_list(top, "ls-files", "--cached", "--others", "--exclude-standard", "--", *targets):
        file = top / rel
        inside = sweepable(top, rel, root)
        if inside is not None and is_python_source(inside):
            n = len(file.read_text(encoding="utf-8", errors="replace").splitlines())
            found[inside] = set(range(1, n + 1))
    return found


def configured_package(root: Path) -> list[str]:
    """The whole project `mutate sweep --all` sweeps, relative to the root: mutmut's own setting
    (`source_paths`, or its older `paths_to_mutate`, from pyproject's [tool.mutmut] or setup.cfg's
    [mutmut]), else the package pyproject's [project] name names (under src/ or at the root),
    else what mutmut itself guesses (lib/, src/, a folder named as the root). SweepScopeError
    says what to set where none is found."""
    settings = mutmut.user_settings(root)
    for key in ("source_paths", "paths_to_mutate"):
        if configured := mutmut.setting_lines(settings.get(key, "")):
            return configured
    candidates: list[str] = []
    try:
        pyproject = root / "pyproject.toml"
        project = load_toml_text(read_text(pyproject), pyproject).get("project")
    except YamlError:
        project = None
    name = project.get("name") if isinstance(project, dict) else None
    if isinstance(name, str):
        package = re.sub(r"[-.]+", "_", name).lower()
        candidates += [f"src/{package}", package]
    own = root.resolve().name
    candidates += ["lib", "src", own, own.replace("-", "_"), f"{own}.py"]
    for candidate in candidates:
        if (root / candidate).exists():
            return [candidate]
    raise SweepScopeError(f"no package configured to sweep in {root}: set source_paths in pyproject.toml's "
                          "[tool.mutmut] (or setup.cfg's [mutmut]), or name the paths: mutate sweep PATH...")


def test_paths(gates: Mapping[str, Gate]) -> list[str]:
    paths: list[str] = []
    for g in gates.values():
        paths.extend(p for p in runs_pytest_targets(g) or () if p not in paths)
    return paths


def sweep(root: Path, since: str, gates: Mapping[str, Gate], *, paths: Sequence[Path] | None = None,
          timeout: float = 3600.0, jobs: int | None = None,
          progress: Callable[[str], None] = lambda s: None) -> SweepResult:
    """mutmut over the files changed since `since` (with `paths`: over every line of the source
    files under them), with its `mutants/` folder of the last sweep where its verdicts still
    stand (sweep_cache): mutmut then runs only the mutants of what changed."""
    version = mutmut.check_installed()
    changed = changed_lines(root, since) if paths is None else whole_files(root, paths)
    if not changed:
        return SweepResult((), 0, (), 0)
    files = sorted(changed)
    progress(f"sweep: mutmut over {len(files)} {'changed ' if paths is None else ''}file(s): {', '.join(files)}")
    space = Worktree(root, 90)
    try:
        scratch = space.root
        # The user's own `mutants/` (copied with the untracked files) is never mutmut's start here.
        shutil.rmtree(scratch / sweep_cache.MUTANTS, ignore_errors=True)
        sources = sorted({PurePosixPath(f).parts[0] for f in files})
        mutmut.write_config(scratch, sources, files, test_paths(gates))
        basis = sweep_cache.basis(root, scratch, files, version)
        carried = sweep_cache.restore(root, scratch, basis)
        mutmut.run(scratch, timeout, jobs)
        reused = sweep_cache.reused(scratch, carried, files)
        sweep_cache.keep(root, scratch, basis)
        codes = mutmut.exit_codes(scratch)
        tests = mutmut.tests_by_function(scratch)
        survivors, suppressed, undecided = _reduce(root, scratch, codes, tests, changed)
    finally:
        space.close()
    result = SweepResult(tuple(files), len(codes), tuple(survivors), suppressed, tuple(sorted(undecided.items())),
                         reused)
    store(root, result)
    return result


def remap(root: Path, survivor: Survivor, gates: Mapping[str, Gate], *, timeout: float = 3600.0) -> Survivor:
    """The survivor with the tests that reach its function now, from mutmut's own test map:
    its stats run over the tree as it is now (the user's edits included), then that one
    mutant. For a survivor no test reached at the sweep, once a test was added for it."""
    mutmut.check_installed()
    space = Worktree(root, 91)
    try:
        scratch = space.root
        mutmut.write_config(scratch, [PurePosixPath(survivor.file).parts[0]], [survivor.file], test_paths(gates))
        mutmut.run(scratch, timeout, names=[survivor.key])
        tests = mutmut.tests_by_function(scratch).get(survivor.function, [])
    finally:
        space.close()
    return replace(survivor, tests=tuple(tests))


def _reduce(root: Path, scratch: Path, codes: Mapping[str, tuple[str, int | None]],
            tests: Mapping[str, list[str]], changed: Mapping[str, set[int]]
            ) -> tuple[list[Survivor], int, dict[str, int]]:
    """(survivors on changed lines, survivors suppressed, undecided mutants by status)."""
    kept: dict[tuple[str, int], Survivor] = {}
    undecided: dict[str, int] = {}
    suppressed = 0
    sources: dict[str, str] = {}
    generated: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for key, (rel, code) in sorted(codes.items(), key=lambda kv: _natural(kv[0])):
        if code in mutmut.KILLED:
            continue
        function = key.split("__mutmut_")[0]
        if rel not in generated:
            generated[rel] = mutmut.mutant_functions(scratch, rel)
        pair = generated[rel].get(key.rsplit(".", 1)[-1])
        # mutmut's generated copy holds every mutant; `mutmut show` only when it cannot be read there.
        parsed = mutmut.function_diff(*pair) if pair else mutmut.parse_show(mutmut.show(scratch, key))
        if rel not in sources:
            sources[rel] = (root / rel).read_text(encoding="utf-8", errors="surrogateescape")
        def_line = mutmut.function_line(sources[rel], function)
        if code not in mutmut.NOT_KILLED:
            # Off the change it would have been suppressed; where its line is unknown it counts.
            off = parsed is not None and def_line is not None and def_line + parsed[0] - 1 not in changed.get(rel, set())
            if not off:
                status = mutmut.undecided_status(code)
                undecided[status] = undecided.get(status, 0) + 1
            continue
        if parsed is None or def_line is None:
            suppressed += 1
            continue
        offset, removed, added = parsed
        line = def_line + offset - 1
        if (line not in changed.get(rel, set()) or (rel, line) in kept or mutmut.is_logging(removed)
                or mutmut.only_message_strings(removed, added)):
            suppressed += 1
            continue
        kept[(rel, line)] = Survivor(key, rel, line, removed, added, function, tuple(tests.get(function, [])),
                                     mutmut.NOT_KILLED[code])
    return list(kept.values()), suppressed, undecided


def _natural(key: str) -> tuple[str, int]:
    head, _, n = key.rpartition("_")
    return (head, int(n)) if n.isdigit() else (key, 0)


def _store_file(root: Path) -> Path:
    return repo_cache(root, "sweeps") / "survivors.json"


def store(root: Path, result: SweepResult) -> None:
    file = _store_file(root)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"root": str(root), "files": list(result.files),
                                "survivors": [s.record() for s in result.survivors]}, indent=1), encoding="utf-8")


def load(root: Path) -> list[Survivor]:
    """The survivors of the last sweep; none where the file is missing or damaged (load_json_object),
    or holds an entry that is no survivor: a damaged cache is a sweep to run again, never a traceback."""
    data = load_json_object(_store_file(root))
    try:
        return [Survivor.from_record(d) for d in (data or {}).get("survivors", [])]
    except (KeyError, TypeError, AttributeError):
        return []


def describe(s: Survivor) -> str:
    before = " / ".join(x.strip() for x in s.removed) or "(nothing)"
    after = " / ".join(x.strip() for x in s.added) or "(deleted)"
    tag = "" if s.status == "survived" else f"  [{s.status}]"
    return f"{s.key}  {s.file}:{s.line}  {before}  ->  {after}{tag}"


def covering_gates(gates: Mapping[str, Gate], tests: Sequence[str]) -> tuple[list[str], list[str]]:
    """(pytest gates that run any of `tests`, pytest gates that run none of them)."""
    red: list[str] = []
    green: list[str] = []
    for g in gates.values():
        found = runs_pytest_targets(g)
        if found is None:
            continue
        targets = [t.rstrip("/") for t in found]
        covers = any(t == test or test.startswith(t + "::") or test.split("::")[0] == t
                     or test.startswith(t + "/") for t in targets for test in tests)
        (red if covers else green).append(g.id)
    return red, green
