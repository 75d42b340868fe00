"""The gate engine as a library: what `gates run` does, for mutations and other callers."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from redfirst.gates import drivers, loader
from redfirst.gates.config import Project, load_project
from redfirst.gates.grade import Graded, grade
from redfirst.gates.loader import LoadError
from redfirst.gates.model import Gate
from redfirst.gates.record import Record, Subject
from redfirst.gates.runner import GateResult, RunContext, run_all, source_state
from redfirst.gates.store import Store, StoreError, export, verify
from redfirst.yamlsrc import YamlError

__all__ = ["EngineRunner", "GateRequest", "GateResult", "GateRunner", "LoadError", "load_gates", "regrade",
           "run_gates", "select"]


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


def gate_runner(proj: Project, progress: Callable[[str], None] | None = None) -> Callable[[Gate], GateResult]:
    """Runs one loaded gate (possibly altered by the caller, as `mutate hazards` alters its step)
    on `proj`'s tree, storing its record in the project's store."""
    from redfirst.gates.runner import run_gate

    ctx = RunContext(proj, Store(proj.state_dir), source_state(proj.root), progress=progress)
    return lambda gate: run_gate(gate, ctx)


def regrade(ref: str, root: Path | None = None, store_dir: Path | None = None) -> tuple[Gate, Graded, Path]:
    """Re-derive the verdict of a stored or exported record from its raw files.
    StoreError when a raw byte changed; LoadError when its gate document is invalid."""
    proj = project(root) if root is not None or store_dir is None else Project(Path.cwd(), None)
    folder = Store(store_dir or proj.state_dir).find(ref)
    _, gate, graded = regrade_folder(folder)
    return gate, graded, folder


def regrade_folder(folder: Path) -> tuple[Record, Gate, Graded]:
    """One record folder, checked (its seal) and graded again from its raw files under the gate
    document it holds. StoreError when a raw byte changed; LoadError when that document is invalid."""
    record = verify(folder)
    gate = loader.gate_from_document(record.gate_document, Path(record.gate_file), Project(folder, None))
    if record.context.hazard is not None:
        from redfirst.gates.drivers.cuda_graph import with_hazard

        gate = with_hazard(gate, record.context.hazard)  # a `mutate hazards` run: graded as it ran
    return record, gate, grade(record, folder, gate)


@dataclass(frozen=True)
class GateRequest:
    """Which gates to run on which tree, and how: what a caller (mutate) hands the gate engine."""

    root: Path                       # the tree to run on (a workspace of the project)
    gate_ids: tuple[str, ...]
    store_dir: Path                  # where the evidence records go
    skip_build: bool = False         # a mutation's own build replaces the gates' builds (DESIGN section 3)
    mutated: str | None = None       # the mode of the mutation applied to the tree; None: untouched
    # (gate id, seconds): limits that replace those gates' own timeouts for this run (mutate
    # derives them from the baseline for gates that set none)
    timeouts: tuple[tuple[str, float], ...] = ()
    # the gates the caller runs next on this tree, once these are done, where it knows them: a
    # driver may make ready for the first (pytest-warm collects its tests ahead). Only a guess:
    # no verdict depends on it.
    then: tuple[str, ...] = ()
    # the one file those next gates find edited, and its bytes then (relative to the root), where
    # the caller knows it: a driver may work out ahead what that edit takes. Only a guess too.
    then_edit: tuple[str, bytes] | None = None
    # gates of driver `pytest-warm` that run as driver `pytest` here: a fresh interpreter per run
    # (mutate's baseline runs each warm gate both ways: redfirst.mutations.warmth)
    cold: tuple[str, ...] = ()
    # what the runs are for, sealed into each record (redfirst.gates.record.Binding): the mutation's
    # id, its patch's digest and the tree it applies to. None: the untouched tree at `root`, bound as
    # a baseline; a mutated run given none is bound to no mutation (its records prove nothing).
    subject: Subject | None = None
    # seconds a gate that needs a lease (a CUDA gate: the local box's GPUs) waits for it before it
    # is NO_DECISION "busy": mutate's workers share the GPUs and queue for them
    lease_wait: float = 0.0

    def bound_to(self) -> Subject | None:
        if self.subject is None and self.mutated is not None:
            return Subject(mutation="", patch="", tree="")
        return self.subject


Finish = Callable[[], list[GateResult]]


@runtime_checkable
class GateRunner(Protocol):
    def start(self, request: GateRequest, while_running: Callable[[], None] | None = None) -> Finish:
        """Run the requested gates' programs now; what is returned seals and grades the runs (it
        reads only their run folders: the tree may be restored first). `while_running` is called
        once, while the first program runs (or at once when there is none)."""
        ...


class EngineRunner:
    """The gate engine as a GateRunner: the one place verdicts come from. Gate files are
    loaded once per root: a batch of a thousand mutations does not parse every gate file a
    thousand times."""

    def __init__(self) -> None:
        self._loaded: dict[Path, tuple[Project, list[Gate]]] = {}
        self._commits: dict[Path, str | None] = {}
        self._lock = threading.Lock()

    def run(self, request: GateRequest) -> list[GateResult]:
        return self.start(request)()

    def start(self, request: GateRequest, while_running: Callable[[], None] | None = None) -> Finish:
        """In worktree and in-place modes the tree is the root's HEAD plus the mutation, so the
        record's source is that commit, dirty, without asking git twice per run (commit mode
        makes a scratch commit per mutation: git is asked). Under a mutation failures are
        expected and reported briefly."""
        from redfirst.gates.runner import execute

        with self._lock:
            if request.root not in self._loaded:
                proj = project(request.root)
                self._loaded[request.root] = (proj, loader.load_gates(proj))
            proj, gates = self._loaded[request.root]
        source: dict[str, Any]
        steady = request.mutated in ("worktree", "in-place")
        if steady and proj.root in self._commits:
            source = {"commit": self._commits[proj.root], "dirty": True}
        else:
            source = source_state(proj.root)
            if steady:
                self._commits[proj.root] = source["commit"]
        ctx = RunContext(proj, Store(request.store_dir), source, skip_build=request.skip_build,
                         brief=request.mutated is not None, subject=request.bound_to(),
                         lease_wait=request.lease_wait)
        limits = dict(request.timeouts)
        executed = []
        chosen = select(gates, list(request.gate_ids)) if request.gate_ids else []   # none asked, none run
        drivers.announce(chosen, proj.root)
        by_id = {g.id: g for g in gates}
        # each gate's next: the request's next gate, and after the last the caller's next
        after = [*chosen[1:], next((by_id[g] for g in request.then[:1] if g in by_id), None)][:len(chosen)]
        for n, (gate, then) in enumerate(zip(chosen, after, strict=True)):
            if gate.id in limits:
                gate = dataclasses.replace(gate, driver=dataclasses.replace(gate.driver, timeout=limits[gate.id]))
            if gate.id in request.cold:
                gate = drivers.cold(gate)
            edit = request.then_edit if n == len(chosen) - 1 else None    # (the gates before: this tree)
            executed.append(execute(gate, ctx, while_running, then, edit))
            while_running = None
        if while_running is not None:
            while_running()
        return lambda: [e.finish() for e in executed]


__all__ += ["StoreError", "Subject", "export", "gate_runner"]
