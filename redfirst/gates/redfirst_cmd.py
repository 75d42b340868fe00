"""`gates red-first GATE --base REV`: prove a new gate can fail.

REV's sources are checked out in a temporary detached worktree outside the user's
tree, HEAD's test side of the gate (`test_side_of`: the gate file, the folders of the tests
and scripts it names, conftest.py and pytest configuration above them) is laid over them
(`lay_test_side`), and the gate must be RED there from an assertion failing, then GREEN on a
clean checkout of HEAD. Where base and HEAD differ only on that test side there is nothing to
prove (NO_DECISION, before any run). The proof is stored and linked to the gate.

What counts as an assertion red (`assertion_red`), read from the base run's record:
- pytest (JUnit XML): a test's call phase failed (`<failure>`, not `<error>`, which is a
  collection, setup or teardown error) with an AssertionError (a plain `assert`,
  `raise AssertionError`, a subclass whose name ends in AssertionError) or `pytest.fail`
  (pytest.raises' "DID NOT RAISE" among them). Any other exception raised in the test
  body (ImportError, AttributeError, FileNotFoundError, NameError, TypeError...) is the
  base lacking something the test reaches for, not a check that failed. `format: pytest`
  terminal output is read the same way from pytest's short summary (`FAILED id - msg`).
- other formats: a case the framework reports failed on a check, as its parser tells
  (`Parser.not_an_assertion`): doctest and Catch2 a failed assertion (a case that only THREW is
  not a red), gtest a `file:line: Failure` that is no `C++ exception ... thrown`, unittest a
  `FAIL:` (never only `ERROR:`), TAP a `not ok` in a run that did not bail out, JUnit a
  `<failure>`; a format that cannot tell a check from a crash (plain, CTest, meson) is never a
  red. An exit status with no failed case (a crash or teardown after the cases), a missing
  binary, a crash before the first case, a timeout or a signal is not a red.
- any driver: the gate's own declared counters or comparisons (`counters`, `bit_exact`,
  `close`) failing after a run that passed, or a framework's failed-assertion count.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from redfirst import yamlsrc
from redfirst.gates import api, drivers, loader, parsers, proofs, proven
from redfirst.gates.config import Project, cache_home, load_project
from redfirst.gates.model import Gate
from redfirst.gates.parsers.pytest import report as pytest_report
from redfirst.gates.record import JUNIT, STDERR, STDOUT
from redfirst.gates.runner import GateResult, RunContext, run_gate, source_state
from redfirst.gates.store import Store, StoreError
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, EXIT_RED, Cause, Verdict

_RED_CAUSES = (Cause.ASSERTION, Cause.EXIT)
# pytest's crash message of an assertion: rewritten `assert`, AssertionError (or a subclass
# named so), pytest.fail / pytest.raises' "Failed: ...".
_ASSERTION_MESSAGE = re.compile(r"^(assert\b|(?:[\w.]*\.)?\w*AssertionError\b|Failed: )")
# Reasons of redfirst.gates.grade for a declared check failing after the run itself passed.
_DECLARED_CHECKS = ("counter ", "bit_exact ", "close ")
_SUMMARY_FAILED = re.compile(r"^FAILED (\S+)(?: - (.*))?$")
_SHORT_SUMMARY = re.compile(r"^=+ short test summary info =+$", re.MULTILINE)


class RedFirstError(Exception):
    pass


class Undecidable(RedFirstError):
    """Nothing can be decided (NO_DECISION)."""


class Unresolvable(Undecidable):
    """The base revision does not resolve."""


class NothingToProve(Undecidable):
    """Base and HEAD differ only on the test side: no source change for the gate to fail on."""


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RedFirstError(f"git {' '.join(args)}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout.strip()


def _cache_dir() -> Path:
    path = cache_home() / "red-first"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def worktree(top: Path, rev: str) -> Iterator[Path]:
    """A detached worktree of `rev`, outside the user's tree, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="wt-", dir=_cache_dir()))
    _git(top, "worktree", "add", "--detach", "--quiet", str(folder), rev)
    try:
        yield folder
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(folder)], cwd=top, capture_output=True,
                       check=False)
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=top, capture_output=True, check=False)


def named_files(gate: Gate, root: Path) -> list[Path]:
    """The gate file and every file or folder the gate's command names that exists under the root."""
    found = [gate.source.file.resolve()]
    words = list(gate.driver.words())
    # unittest names its tests as dotted modules (`python -m unittest -v tests.test_x.Case`)
    dotted = "unittest" in words or gate.driver.format == "unittest"
    for word in words:
        for name in (word.split("::")[0], *(_module_files(word) if dotted else ())):
            candidate = (root / gate.driver.cwd / name).resolve()
            if candidate.exists() and candidate.is_relative_to(root.resolve()) and candidate != root.resolve():
                found.append(candidate)
                break
    return found


_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
# What pytest (and a wrapper's interpreter) reads beside the tests in every folder above them.
_TEST_CONFIG = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")


def _module_files(word: str) -> list[str]:
    """The files a dotted name (`python -m unittest tests.test_x.Case.test_y`) may name, longest first:
    `tests/test_x/Case/test_y.py`, ..., `tests/test_x.py`, `tests/` (a package)."""
    if not _DOTTED.match(word):
        return []
    parts = word.split(".")
    return [f"{'/'.join(parts[:n])}{suffix}" for n in range(len(parts), 0, -1) for suffix in (".py", "")]


def test_side_of(gate: Gate, root: Path, top: Path) -> tuple[list[str], list[str]]:
    """The test side of `gate`, as paths relative to the top: (named, around).

    `named`: the gate file and each file or folder its `run:` names (`named_files`), which must be
    committed at HEAD. `around`: for each named file (for a pytest gate naming none, each file or
    folder it collects: `_collected`), the whole folder it lives in (unless that
    folder is the project root or the top: then only the file), and in every folder from each named
    path and from the gate's cwd up to the top, `conftest.py`, `pytest.ini`, `.pytest.ini`,
    `tox.ini`, `setup.cfg` and `pyproject.toml`; plus the project's `redfirst.yaml`. A caller may
    rely on this: a test file, helper, fixture, configuration or script the gate reads through
    any of these is in the returned paths, whichever way `run:` names it."""
    top, root = top.resolve(), root.resolve()
    named = [p.relative_to(top).as_posix() for p in named_files(gate, root)]
    folders = [root / gate.driver.cwd]
    around = [(root / "redfirst.yaml").relative_to(top).as_posix()]
    for path in [top / rel for rel in named[1:]] + _collected(gate, root, top, len(named) > 1):
        folder = path if path.is_dir() else path.parent
        if folder not in (root, top):
            around.append(folder.relative_to(top).as_posix())
        folders.append(folder)
    for folder in folders:
        for up in (folder.resolve(), *folder.resolve().parents):
            if not up.is_relative_to(top):
                break
            around += [(up / name).relative_to(top).as_posix() for name in _TEST_CONFIG]
    return named, sorted(set(around) - set(named))


def _testpaths(folder: Path) -> list[str]:
    """The `testpaths` of every pytest configuration file in `folder` (ini, tox, setup.cfg, pyproject)."""
    import configparser

    found: list[str] = []
    for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        with contextlib.suppress(configparser.Error, OSError, UnicodeDecodeError):
            parser.read(folder / name, encoding="utf-8")
            found += parser.get(section, "testpaths", fallback="").split()
    with contextlib.suppress(yamlsrc.YamlError, AttributeError, TypeError):
        table = yamlsrc.load_toml_text(yamlsrc.read_text(folder / "pyproject.toml"), folder / "pyproject.toml")
        paths = table.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("testpaths", [])
        found += paths.split() if isinstance(paths, str) else [str(p) for p in paths]
    return found


def _collected(gate: Gate, root: Path, top: Path, names_a_path: bool) -> list[Path]:
    """What a pytest-family gate whose `run:` names no path collects: the `testpaths` of the
    configuration in its cwd and above (each folder's own, globs expanded), else every
    `test_*.py` / `*_test.py` git tracks under its cwd."""
    if names_a_path or drivers.runs_pytest_targets(gate) is None:
        return []
    cwd = (root / gate.driver.cwd).resolve()
    found = [hit for up in (cwd, *cwd.parents) if up.is_relative_to(top)
             for pattern in _testpaths(up) for hit in up.glob(pattern)]
    if not found:
        tracked = subprocess.run(["git", "ls-files", "-z"], cwd=cwd, capture_output=True, check=False).stdout
        found = [cwd / name for name in os.fsdecode(tracked).split("\0")
                 if fnmatch.fnmatch(Path(name).name, "test_*.py") or fnmatch.fnmatch(Path(name).name, "*_test.py")]
    return [hit.resolve() for hit in found if hit.resolve().is_relative_to(top)]


def _listing(top: Path, rev: str) -> dict[str, str]:
    """Every file of `rev` (relative to the top) -> its mode and blob id."""
    out = subprocess.run(["git", "ls-tree", "-r", "-z", "--full-tree", rev], cwd=top, capture_output=True,
                         check=True).stdout.decode("utf-8", "surrogateescape")
    entries = (line.split("\t", 1) for line in out.split("\0") if line)
    return {path: meta for meta, path in entries}


def _under(path: str, sides: list[str]) -> bool:
    return any(path == side or path.startswith(side + "/") for side in sides)


def lay_test_side(top: Path, tree: Path, base: str, head: str, named: list[str], around: list[str]) -> list[str]:
    """Make the worktree `tree` (of `base`) hold HEAD's version of every test-side path: HEAD's files
    with their modes and link targets, and no file that HEAD lacks there. Returns the files that
    still differ between the base and HEAD outside the test side: what the gate can tell apart.
    Raises RedFirstError for a named path HEAD does not hold."""
    at_head, at_base = _listing(top, head), _listing(top, base)
    for rel in named:
        if not any(_under(path, [rel]) for path in at_head):
            raise RedFirstError(f"{rel} is not committed at HEAD; red-first lays HEAD's files over the base, "
                                "so commit the gate and its tests first")
    sides = named + around
    for path in sorted(set(at_base) - set(at_head)):
        if _under(path, sides):
            gone = tree / path
            shutil.rmtree(gone) if gone.is_dir() and not gone.is_symlink() else gone.unlink(missing_ok=True)
    laid = [path for path, meta in at_head.items() if _under(path, sides) and not meta.startswith("160000")]
    subprocess.run(["git", "--literal-pathspecs", "checkout", "--quiet", head, "--pathspec-from-file=-",
                    "--pathspec-file-nul"], cwd=tree, input="\0".join(laid).encode("utf-8", "surrogateescape"),
                   capture_output=True, check=True)
    return sorted(p for p in set(at_base) | set(at_head) if at_base.get(p) != at_head.get(p) and not _under(p, sides))


def _pytest_junit_red(junit: str) -> str | None:
    """None when a case failed an assertion in its call phase; else why the red is not one."""
    import xml.etree.ElementTree as ET

    try:
        cases = list(ET.fromstring(junit).iter("testcase"))
    except ET.ParseError as e:
        return f"its JUnit report is not well-formed ({e})"
    others: list[str] = []
    for case in cases:
        name = ".".join(filter(None, (case.get("classname"), case.get("name")))) or "?"
        for child in case:
            message = " ".join((child.get("message") or "").split())[:160]
            if child.tag == "failure" and _ASSERTION_MESSAGE.match(message):
                return None
            if child.tag == "failure":
                others.append(f"{name} raised {message or '?'} in its call phase, not an assertion")
            elif child.tag == "error":
                phase = "collection" if message == "collection failure" else "setup or teardown"
                others.append(f"{name}: a {phase} error ({message or '?'})")
    return "; ".join(others[:3]) if others else "no case failed in its call phase"


def _pytest_summary_red(text: str) -> str | None:
    """The same rule over pytest's last short test summary, for `format: pytest` output: what came
    before it (a test's captured or `-s` output, a line it printed like `FAILED x - AssertionError`)
    is not pytest's report."""
    others = []
    for line in _SHORT_SUMMARY.split(text)[-1].splitlines():
        m = _SUMMARY_FAILED.match(line.strip())
        if m is None:
            continue
        if _ASSERTION_MESSAGE.match(m.group(2) or ""):
            return None
        others.append(f"{m.group(1)} failed with {m.group(2) or '?'}, not an assertion")
    return "; ".join(others[:3]) if others else "no FAILED line with an assertion in pytest's short summary"


def assertion_red(gate: Gate, result: GateResult, store: Store) -> str | None:
    """None when `result` (RED) is a red of the test's own assertions (module docstring);
    else a one-line reason why it is not."""
    if result.cause is Cause.ASSERTION and result.reason.startswith(_DECLARED_CHECKS):
        return None
    try:
        folder = store.find(result.evidence_id or "")
    except StoreError as e:   # no record: nothing shows an assertion failed
        return f"its evidence record cannot be read ({e})"

    def read(name: str) -> str:
        path = folder / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    if drivers.runs_pytest_targets(gate) is not None:
        junit = read(JUNIT)
        return _pytest_junit_red(junit) if junit.strip() else "it wrote no JUnit report"
    if gate.driver.format == "pytest":
        return _pytest_summary_red(pytest_report(read(STDOUT), read(STDERR)))
    if "assertions failed" in result.reason:
        return None
    if not result.counts.get("failed"):
        return f"{result.reason}: no failed case (a crash or teardown after the cases is not an assertion)"
    if gate.driver.format not in parsers.REGISTRY:
        return f"{result.reason}, but format {gate.driver.format!r} shows no case: no assertion failed that it can show"
    # Each format says whether a failed case failed on a check, or threw, crashed, errored or bailed out.
    why = parsers.get(gate.driver.format).not_an_assertion(read(STDOUT), read(STDERR), read(JUNIT) or None)
    return f"{result.reason}, but {why}" if why else None


def _run_in(tree_root: Path, gate_id: str, store: Store) -> GateResult:
    proj = load_project(tree_root)
    try:
        (gate,) = api.select(loader.load_gates(proj), [gate_id])
    except loader.LoadError as e:
        raise RedFirstError(f"in {tree_root}: {e.problems[0]}") from None
    return run_gate(gate, RunContext(proj, store, source_state(tree_root)))


def red_first(project: Project, gate_id: str, base: str) -> tuple[GateResult, GateResult, int, str]:
    top = Path(_git(project.root, "rev-parse", "--show-toplevel")).resolve()
    sub = project.root.resolve().relative_to(top)
    try:
        base_sha = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}")
    except RedFirstError:
        raise Unresolvable(f"--base {base!r} does not resolve to a commit in {top}") from None
    head_sha = _git(top, "rev-parse", "--verify", "HEAD^{commit}")
    (gate,) = api.select(loader.load_gates(project), [gate_id])
    store = Store(project.state_dir)
    named, around = test_side_of(gate, project.root, top)
    with worktree(top, base_sha) as tree:
        changed = lay_test_side(top, tree, base_sha, head_sha, named, around)
        if not changed:
            raise NothingToProve(
                f"{base} ({base_sha[:12]}) and HEAD differ only in the gate's test side (its tests' folders, "
                "conftest.py and pytest configuration, the scripts it runs): no source changed, nothing to "
                "prove RED against")
        at_base = _run_in(tree / sub, gate_id, store)
    with worktree(top, head_sha) as tree:
        # The proof holds for HEAD's tree: keyed before the gate runs there (redfirst.gates.proven).
        # Above the worktree's top, what lies around the user's tree stands in (treekey.surroundings).
        head_key = proven.tree_state(tree / sub, tuple(tree / sub / p.relative_to(project.root)
                                                       for p in project.mutation_paths), (tree, top)).digest
        at_head = _run_in(tree / sub, gate_id, store)
    layer = f"HEAD's test side over {base_sha[:12]}, {len(changed)} other file(s) differ"
    if at_base.verdict is Verdict.GREEN:
        return at_base, at_head, EXIT_RED, f"GREEN on {base}'s sources ({layer}): the gate cannot tell them apart"
    if at_base.verdict is not Verdict.RED or at_base.cause not in _RED_CAUSES:
        code = EXIT_ERROR if at_base.verdict is Verdict.ERROR else EXIT_NO_DECISION
        why = at_base.cause.value if at_base.cause else "none"
        return at_base, at_head, code, (f"{at_base.verdict.value} (cause {why}) on {base}: not a red; "
                                        "red-first needs RED with cause assertion or exit")
    collection_error = drivers.runs_pytest_targets(gate) is not None and at_base.counts.get("exit") == 2
    # Without case counts an exit status cannot tell a failed check from a missing file or import.
    uncounted = "cases" not in at_base.counts
    if at_base.cause is Cause.EXIT and (collection_error or uncounted or at_base.counts["cases"] == 0):
        return at_base, at_head, EXIT_NO_DECISION, (
            f"RED on {base} only because the run could not start its cases ({at_base.reason}): a missing "
            "file or import is not a red; the gate must fail an assertion there")
    not_assertion = assertion_red(gate, at_base, store)
    if not_assertion is not None:
        return at_base, at_head, EXIT_NO_DECISION, (
            f"RED on {base} but not from an assertion: {not_assertion}; a missing fixture, import, file or "
            "attribute is not a red: the gate must fail an assertion there")
    if at_head.verdict is not Verdict.GREEN:
        code = {Verdict.RED: EXIT_RED, Verdict.ERROR: EXIT_ERROR}.get(at_head.verdict, EXIT_NO_DECISION)
        return at_base, at_head, code, f"RED on {base} but {at_head.verdict.value} at HEAD: {at_head.reason}"
    proofs.add_proof(project.root, gate_id, "red-first", base_sha,
                     [e for e in (at_base.evidence_id, at_head.evidence_id) if e], head_key)
    return at_base, at_head, EXIT_OK, f"proven: RED ({at_base.cause.value}) on {base_sha[:12]}, GREEN at HEAD"


def main(args: argparse.Namespace) -> int:
    try:
        project = api.project(args.root)
        at_base, at_head, code, conclusion = red_first(project, args.gate, args.base)
    except (RedFirstError, loader.LoadError) as e:
        message = e.problems[0] if isinstance(e, loader.LoadError) else str(e)
        print(f"{'NO_DECISION' if isinstance(e, Undecidable) else 'ERROR'}: {message}", file=sys.stderr)
        return EXIT_NO_DECISION if isinstance(e, Undecidable) else EXIT_ERROR
    if args.json:
        from redfirst.gates.report import item_json

        print(json.dumps({"version": 1, "exit": code, "gate": args.gate, "conclusion": conclusion,
                          "items": [dict(item_json(at_base), id=f"{args.gate}@base"),
                                    dict(item_json(at_head), id=f"{args.gate}@HEAD")]}, indent=2))
    else:
        for label, r in (("base", at_base), ("HEAD", at_head)):
            cause = f" ({r.cause.value})" if r.cause else ""
            print(f"{args.gate} at {label}: {r.verdict.value}{cause} {r.reason} [{(r.evidence_id or '')[:12]}]")
        print(conclusion)
    return code
