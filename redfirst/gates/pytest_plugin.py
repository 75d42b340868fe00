"""pytest plugin of redfirst (entry point `pytest11: redfirst`).

- The `gates_evidence` fixture: a recorder for the running gate's evidence folder.
- What the run read, where the runner asks (`$GATES_READS`): redfirst.gates.read_hook, from the
  plugin's import (a cold run) or the first hook of a warm fork, reported at the end.
- Gate files as pytest items: `pytest path/to/gates/` collects one item per gate, only
  in a project whose `redfirst.yaml` has a `gates:` section, only from its gate folders and only from YAML whose top
  level has `gate:`. A RED, NO_DECISION or ERROR gate fails its item: never passed, never skipped.

Kept import-light: it loads in every pytest run of every project with redfirst installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from redfirst.gates import evidence, read_hook

if TYPE_CHECKING:
    from redfirst.gates.config import Project
    from redfirst.gates.model import Gate

_projects: dict[Any, Any] = {}

# A cold run imports this plugin before any conftest.py: what they read is seen.
read_hook.start()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # A warm fork imported this plugin long before its run: the run starts here.
    read_hook.start()


# The files pytest looks in for its configuration, in each folder from the test paths (and the
# working folder) up to the top (_pytest.config.findpaths), and the conftest.py files it looks
# for on the way (it only asks whether one is there: one added is read by no run before it).
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "conftest.py")


def config_files(config: pytest.Config) -> tuple[str, ...]:
    """Every file pytest read or looked for while it found its configuration, there or not: one
    with no pytest section is no ini file (`config.inipath` None), yet adding one to it (or the file
    itself) changes the run. (String paths, not pathlib: this runs at the end of every run.)"""
    here = str(config.invocation_params.dir)
    starts = {here}
    for arg in config.invocation_params.args:
        arg = str(arg)
        path = os.path.join(here, arg.split("::")[0])
        if not arg.startswith("-") and os.path.exists(path):
            starts.add(path if os.path.isdir(path) else os.path.dirname(path))
    folders = set()
    for start in starts:
        folder = os.path.realpath(start)
        while folder not in folders:
            folders.add(folder)
            folder = os.path.dirname(folder)
    return tuple(os.path.join(f, name) for f in sorted(folders) for name in CONFIG_FILES)


def pytest_unconfigure(config: pytest.Config) -> None:
    # The ini file, and the files looked in for one, were read before any plugin was imported; so
    # were the folders of the import path, listed as the interpreter started (a module added to
    # one shadows a later one's).
    read_hook.report(tuple(str(p) for p in (config.inipath,) if p is not None) + config_files(config)
                     + tuple(os.path.abspath(p) for p in sys.path if isinstance(p, str) and os.path.isdir(p or ".")))


@pytest.fixture
def gates_evidence() -> Iterator[evidence.Recorder]:
    """A recorder for the running gate's evidence folder (inactive outside a gate)."""
    yield from evidence.gates_evidence_fixture()


def _project_of(path: Path) -> Project | str | None:
    """The project whose gate files `path` may be one of; None where gate items are not wanted; the
    configuration's problems (file:line) where it cannot be loaded: then nobody can say which
    folders hold gates, and a gate document must fail with them, never silently vanish."""
    from redfirst.gates.config import find_root, load_project
    from redfirst.yamlsrc import YamlError

    with read_hook.redfirst_own():     # its git lookup is no process of the run
        root = find_root(path.parent)
    if root not in _projects:
        try:
            _projects[root] = load_project(root)
        except YamlError as e:
            _projects[root] = str(e)
    project: Project | str | None = _projects[root]
    if isinstance(project, str):
        return project
    # Gate items only where the project's redfirst.yaml configures gate folders (`gates:`): a project
    # with none, or one that configures only checkers, keeps its own `gates/` folder to itself.
    return project if project is not None and "gates" in project.config_sections() else None


def _in_gate_folder(path: Path, project: Project) -> bool:
    resolved = path.resolve()
    return any(resolved == folder.resolve() or resolved.is_relative_to(folder.resolve())
               for folder in project.gate_paths)


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    project = _project_of(file_path)
    if isinstance(project, str):
        return _unloadable(parent, file_path, project)
    if project is None or not _in_gate_folder(file_path, project):
        return None
    from redfirst.gates.loader import is_gate_document
    from redfirst.yamlsrc import YamlError, load_file

    try:
        if not is_gate_document(load_file(file_path).data):
            return None
    except YamlError:
        pass  # a broken file in a gate folder is reported, not ignored
    gate_file: GateFile = GateFile.from_parent(parent, path=file_path)
    gate_file.project = project
    return gate_file


def _unloadable(parent: pytest.Collector, file_path: Path, problems: str) -> pytest.Collector | None:
    """A gate document (top level `gate:`) of a project whose configuration cannot be loaded: an
    item-less file that fails collection with the configuration's problems."""
    from redfirst.gates.loader import is_gate_document
    from redfirst.yamlsrc import YamlError, load_file

    try:
        if not is_gate_document(load_file(file_path).data):
            return None
    except YamlError:
        return None
    broken: UnloadableGateFile = UnloadableGateFile.from_parent(parent, path=file_path)
    broken.problems = problems
    return broken


class GateFile(pytest.File):
    project: Project

    def collect(self) -> Iterator[GateItem]:
        from redfirst.gates.loader import LoadError, gate_files, is_gate_document, load_gates
        from redfirst.yamlsrc import YamlError, load_file

        # The whole project's gate files load together, as `gates run` loads them, so an id
        # declared in two files fails both instead of running twice.
        key = ("gates", self.project.root)
        if key not in _projects:
            files = []
            for file in gate_files(self.project):
                try:
                    if is_gate_document(load_file(file).data):
                        files.append(file)
                except YamlError:
                    files.append(file)
            try:
                _projects[key] = load_gates(self.project, files)
            except LoadError as e:
                _projects[key] = e
        loaded = _projects[key]
        if isinstance(loaded, LoadError):
            mine = [p for p in loaded.problems if p.startswith(f"{self.path}:")] or loaded.problems
            raise GateFileError("\n".join(mine))
        gates = [g for g in loaded if g.source.file.resolve() == self.path.resolve()]
        for gate in gates:
            item: GateItem = GateItem.from_parent(self, name=gate.id)
            item.gate = gate
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, GateFileError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class UnloadableGateFile(GateFile):
    problems: str

    def collect(self) -> Iterator[GateItem]:
        raise GateFileError(f"{self.path}: not collected: the project's configuration cannot be loaded:\n"
                            f"{self.problems}")


class GateFileError(Exception):
    """A gate file that cannot be loaded (file:line problems)."""


class GateFailed(Exception):
    """A gate that was not GREEN."""


def _unmutated(root: Path) -> None:
    """As `gates run` does first: a killed in-place mutate run's edits are restored before a gate
    item grades the tree, and a tree a live run holds mutated is refused, never graded."""
    from redfirst.journal import RestoreError
    from redfirst.unmutated import TreeBusy, before_grading

    try:
        for line in before_grading(root):
            sys.stderr.write(f"gates: {line}\n")
    except (TreeBusy, RestoreError, OSError) as e:
        raise GateFailed(f"ERROR: not graded: {e}") from None


_TRACKED_AT_START: dict[str, dict[str, str]] = {}


class GateItem(pytest.Item):
    gate: Gate

    def runtest(self) -> None:
        from redfirst.gates.runner import RunContext, rewritten, run_gate, source_state
        from redfirst.gates.store import Store
        from redfirst.gates.treekey import tracked
        from redfirst.verdict import Verdict

        project = self.parent.project  # type: ignore[union-attr]
        _unmutated(project.root)
        # the tracked files as the first gate item of this process found them: an earlier item's run
        # that rewrote one leaves no later item GREEN, as `gates run` has it (runner.run_all)
        if str(project.root) not in _TRACKED_AT_START:
            _TRACKED_AT_START[str(project.root)] = tracked(project.root)
        before = _TRACKED_AT_START[str(project.root)]
        result = run_gate(self.gate, RunContext(project, Store(project.state_dir), source_state(project.root)))
        self.user_properties.append(("verdict", result.verdict.value))
        self.user_properties.append(("evidence", result.evidence_id or ""))
        said = rewritten(before, project.root) if result.verdict is Verdict.GREEN else None
        if said is not None:
            raise GateFailed(f"NO_DECISION (evidence): {said}; it was GREEN [evidence {result.evidence_id}]")
        if result.verdict is not Verdict.GREEN:
            cause = f" ({result.cause.value})" if result.cause else ""
            raise GateFailed(f"{result.verdict.value}{cause}: {result.reason} [evidence {result.evidence_id}]")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (GateFailed, GateFileError)):
            return f"gate {self.gate.id}: {excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.gate.source.line - 1, f"gate {self.gate.id}"
