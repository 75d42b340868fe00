"""The gate engine as a library: what `gates run` does, for mutations and other callers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from gates import loader
from gates.config import Project, load_project
from gates.grade import Graded, grade
from gates.loader import LoadError
from gates.model import Gate
from gates.runner import GateResult, RunContext, run_all, source_state
from gates.store import Store, StoreError, verify
from gates.yamlsrc import YamlError

__all__ = ["GateResult", "LoadError", "load_gates", "regrade", "run_gates", "select"]


def project(root: Path | None) -> Project:
    try:
        return load_project(root)
    except YamlError as e:
        raise LoadError(e.problems) from None


def load_gates(root: Path | None = None) -> list[Gate]:
    """Every gate of the project at `root`; LoadError lists every problem with file:line."""
    return loader.load_gates(project(root))


def select(gates: Sequence[Gate], selection: Sequence[str] | None = None, keyword: str | None = None) -> list[Gate]:
    """Gates by id (exact, or a glob) and `-k` substring; an unknown id is a LoadError."""
    import fnmatch

    chosen = list(gates)
    if selection:
        chosen = []
        for pattern in selection:
            hits = [g for g in gates if fnmatch.fnmatchcase(g.id, pattern)]
            if not hits:
                raise LoadError([f"no gate matches {pattern!r} (known: {', '.join(g.id for g in gates) or 'none'})"])
            chosen.extend(h for h in hits if h not in chosen)
    if keyword:
        negate = keyword.startswith("not ")
        words = [w.strip() for w in keyword.removeprefix("not ").split(" or ")]
        chosen = [g for g in chosen if any(w in g.id or w in (g.kind or "") for w in words) != negate]
    return chosen


def run_gates(root: Path | None = None, selection: Sequence[str] | None = None, *, jobs: int = 1,
              store_dir: Path | None = None, lease: str | None = None, lease_wait: float = 0.0,
              progress: Callable[[str], None] | None = None, skip_build: bool = False) -> list[GateResult]:
    """Load, select and run gates; every run is kept in the evidence store. `skip_build`
    drops the gates' own `build:` (a mutation's build replaces it, DESIGN section 3)."""
    proj = project(root)
    gates = select(loader.load_gates(proj), selection)
    ctx = RunContext(proj, Store(store_dir or proj.state_dir), source_state(proj.root), lease, lease_wait, progress,
                     skip_build=skip_build)
    return run_all(gates, ctx, jobs)


def regrade(ref: str, root: Path | None = None, store_dir: Path | None = None) -> tuple[Gate, Graded, Path]:
    """Re-derive the verdict of a stored or exported record from its raw files.
    StoreError when a raw byte changed; LoadError when its gate document is invalid."""
    proj = project(root) if root is not None or store_dir is None else Project(Path.cwd(), None)
    folder = Store(store_dir or proj.state_dir).find(ref)
    record = verify(folder)
    gate = loader.gate_from_document(record.gate_document, Path(record.gate_file), Project(folder, None))
    return gate, grade(record, folder, gate), folder


__all__ += ["StoreError"]
