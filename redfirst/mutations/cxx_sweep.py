"""`mutate sweep` over the C, C++ and CUDA files a change touches: tree-sitter's mutants of the
changed lines (cxx_mutants), each compiled first (cxx_equivalence: EQUIVALENT, DUPLICATE or not
compiled decide it with no gate run), the rest anchored mutations run by the engine against the
gates whose build compiles the file, one gate at a time until one kills it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from redfirst.gates.model import Gate, Source
from redfirst.mutations import cxx_equivalence
from redfirst.mutations.anchor import occurrences
from redfirst.mutations.builds import gate_step, run_steps, seed
from redfirst.mutations.cxx_mutants import CxxMutant, mutants
from redfirst.mutations.engine import Engine, MutationResult
from redfirst.mutations.model import Expect, Mutation
from redfirst.mutations.mutmut import Survivor
from redfirst.mutations.outcome import BuildStatus
from redfirst.mutations.workspaces.worktree import Worktree
from redfirst.verdict import MutationOutcome

# Outputs a build writes that name the sources it compiled: depfiles, compile databases, ninja files.
_NAMING = (".d", ".json", ".make", ".ninja", ".internal")
_NAMING_UP_TO = 4 << 20


@dataclass(frozen=True)
class Finding:
    """One mutant's outcome: `result` the engine's (for the last gate it ran against) or, where
    no gate ran, one made here with the reason."""

    mutant: CxxMutant
    result: MutationResult
    gates: tuple[str, ...]           # the gates whose build compiles its file

    @property
    def outcome(self) -> MutationOutcome:
        return self.result.outcome

    def warning(self) -> str:
        """The compiler's form: `file:line:col: warning: Survived: Replaced >= with < [cxx_ge_to_lt]`."""
        m = self.mutant
        return f"{m.file}:{m.line}:{m.col}: warning: Survived: {m.description} [{m.operator}]"

    def survivor(self) -> Survivor:
        """What `mutate promote` reads back: the anchored lines before and after."""
        mu = self.result.mutation
        return Survivor(self.mutant.key, mu.file, mu.source.line, tuple(mu.anchor.split("\n")),
                        tuple(mu.replace.split("\n")), self.mutant.operator, (), "survived", self.gates)


@dataclass(frozen=True)
class CxxResult:
    files: tuple[str, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]           # per file: why equivalence is off, why no gate builds it
    seconds: float                   # the whole sweep, builds and compiles included

    def counts(self) -> dict[str, int]:
        found = {o.value: 0 for o in MutationOutcome}
        for f in self.findings:
            found[f.outcome.value] += 1
        return {k: n for k, n in found.items() if n}

    @property
    def survivors(self) -> list[Finding]:
        return [f for f in self.findings if f.outcome is MutationOutcome.SURVIVED]


def combined(outcomes: Sequence[MutationOutcome]) -> MutationOutcome:
    """A mutant's outcome over the gates it ran against, one each: KILLED where any killed it;
    SURVIVED where every gate ran and stayed GREEN or made the same code of it (EQUIVALENT there:
    that gate's build cannot see it, which says nothing of the gate whose build compiled it and
    stayed GREEN), and one stayed GREEN; else the worst of the rest (ERROR, then DISCARDED, then
    EQUIVALENT): a gate that did not decide could have killed it. A caller may rely on this: never
    SURVIVED unless each outcome is SURVIVED or EQUIVALENT, never KILLED unless one is, never
    EQUIVALENT where a gate's build compiled the mutant into other code (that gate said SURVIVED)."""
    if MutationOutcome.KILLED in outcomes:
        return MutationOutcome.KILLED
    if MutationOutcome.SURVIVED in outcomes and all(
            o in (MutationOutcome.SURVIVED, MutationOutcome.EQUIVALENT) for o in outcomes):
        return MutationOutcome.SURVIVED
    for worst in (MutationOutcome.ERROR, MutationOutcome.UNSCOPED, MutationOutcome.DISCARDED,
                  MutationOutcome.EQUIVALENT):
        if worst in outcomes:
            return worst
    return MutationOutcome.DISCARDED


def anchored(m: CxxMutant, source: bytes, gate: str, root: Path) -> Mutation:
    """The mutant as an anchored mutation of the whole lines its edit spans, against `gate`."""
    first = source.rfind(b"\n", 0, m.start) + 1
    last = source.find(b"\n", m.end)
    last = len(source) if last < 0 else last
    text = source.decode("utf-8", errors="surrogateescape")
    anchor = source[first:last].decode("utf-8", errors="surrogateescape")
    after = m.apply(source)[first:last + len(m.after.encode("utf-8", errors="surrogateescape"))
                              - (m.end - m.start)].decode("utf-8", errors="surrogateescape")
    at = len(source[:first].decode("utf-8", errors="surrogateescape"))
    where = occurrences(text, anchor)
    line = source.count(b"\n", 0, first) + 1
    return Mutation(id=mutation_id(m, gate), file=m.file, anchor=anchor, replace=after,
                    source=Source(root / m.file, line), expect=Expect(red=(gate,)),
                    why=f"{m.description} [{m.operator}]",
                    occurrence=where.index(at) + 1 if len(where) > 1 else None)


def mutation_id(m: CxxMutant, gate: str | None = None) -> str:
    """The mutant's id in reports (`gate`: of its run against that gate alone)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", m.key + (f"@{gate}" if gate else "")).strip("-")


def builds_file(scratch: Path, file: str, gate: Gate) -> bool:
    """Whether `gate`'s build compiles `file`: its build command names it, or an output in its
    `build_dir:` that names sources (a depfile, compile_commands.json) names it."""
    if gate.build is None:
        return False
    said = gate.build if isinstance(gate.build, str) else " ".join(gate.build)
    if file in said:
        return True
    folder = scratch / gate.build_dir if gate.build_dir else None
    if folder is None or not folder.is_dir():
        return False
    names = (file.encode(), str((scratch / file).resolve()).encode())
    for path in folder.rglob("*"):
        if path.suffix in _NAMING and path.is_file():
            try:
                data = path.read_bytes()[:_NAMING_UP_TO]
            except OSError:
                continue
            if any(n in data for n in names):
                return True
    return False


def _decided(m: CxxMutant, source: bytes, root: Path, outcome: MutationOutcome, reason: str,
             gates: Sequence[str]) -> Finding:
    mutation = replace(anchored(m, source, gates[0] if gates else "-", root), id=mutation_id(m))
    return Finding(m, MutationResult(mutation, outcome, None, reason, BuildStatus("none"),
                                     line=mutation.source.line), tuple(gates))


def sweep_cxx(root: Path, changed: Mapping[str, set[int] | None], gates: Mapping[str, Gate], *, jobs: int = 1,
              progress: Callable[[str], None] = lambda s: None, use_cache: bool = True) -> CxxResult:
    """The mutants of the `changed` lines of each C, C++ or CUDA file (relative to `root`; None:
    every line), each
    decided: by its compile where that settles it, else by the gates that build its file."""
    started = time.monotonic()
    files = sorted(changed)
    findings: list[Finding] = []
    notes: list[str] = []
    pending: list[tuple[CxxMutant, bytes, tuple[str, ...]]] = []
    space = Worktree(root, 92)
    try:
        scratch = space.root
        built = [g for g in gates.values() if g.build is not None]
        for step in {gate_step(g).key: gate_step(g) for g in built}.values():
            seed(step, root, scratch)        # the user's build folders, where they can be copied: incremental
            status = run_steps([step], scratch)
            if status.state != "ok":
                notes.append(f"the build {step.argv!r} failed on the untouched tree ({status.state}: "
                             f"{status.reason}): its gates build nothing")
        for file in files:
            source = (root / file).read_bytes()
            found = mutants(file, source, changed[file])
            seen = cxx_equivalence.witness(space, file, built) if found else None
            by = tuple(g.id for g in built if seen is not None and (
                seen.builds(g.id) or g.id in seen.failed and builds_file(scratch, file, g)))
            progress(f"sweep: {len(found)} mutant(s) on the changed lines of {file}; gates that build it: "
                     f"{', '.join(by) or 'none'}")
            if not found:
                continue
            why_not = cxx_equivalence.no_nvcc(file) or (
                None if by else f"no gate's build compiles {file}: nothing can grade its mutants")
            if why_not:
                notes.append(f"{file}: {why_not}")
                findings += [_decided(m, source, root, MutationOutcome.DISCARDED, why_not, by) for m in found]
                continue
            tce = cxx_equivalence.Equivalence(space, file, cxx_equivalence.find_commands(
                scratch, file, [gates[g] for g in by], space, seen))
            if tce.off:
                notes.append(f"{file}: equivalence off: {tce.off}")
            for m in found:
                said = tce.judge(m.key, m.apply(source))
                if said is None:
                    pending.append((m, source, by))
                else:
                    findings.append(_decided(m, source, root, MutationOutcome(said[0]), said[1], by))
    finally:
        space.close()
    findings += _graded(root, gates, pending, jobs, progress, use_cache)
    order = {f: i for i, f in enumerate(files)}
    findings.sort(key=lambda f: (order[f.mutant.file], f.mutant.start, f.mutant.operator))
    return CxxResult(tuple(files), tuple(findings), tuple(notes), time.monotonic() - started)


def _graded(root: Path, gates: Mapping[str, Gate], pending: Sequence[tuple[CxxMutant, bytes, tuple[str, ...]]],
            jobs: int, progress: Callable[[str], None], use_cache: bool) -> list[Finding]:
    """Each pending mutant run by the engine against its gates, one pass per gate, a pass taking
    only the mutants no earlier gate killed; decided by `combined`."""
    seen: dict[str, list[MutationResult]] = {m.key: [] for m, _, _ in pending}
    gate_order = list(dict.fromkeys(g for _, _, by in pending for g in by))
    for gate in gate_order:
        batch = [anchored(m, source, gate, root) for m, source, by in pending if gate in by
                 and MutationOutcome.KILLED not in [r.outcome for r in seen[m.key]]]
        if not batch:
            continue
        progress(f"sweep: {len(batch)} mutant(s) against {gate}")
        keys = {mutation_id(m, gate): m.key for m, _, _ in pending}
        for r in Engine(root, gates, jobs=jobs, progress=progress, use_cache=use_cache, prove=False).run(batch):
            seen[keys[r.mutation.id]].append(r)
    found = []
    for m, _, by in pending:
        results = seen[m.key]
        outcome = combined([r.outcome for r in results])
        last = next((r for r in results if r.outcome is outcome), results[-1])
        seconds = sum(r.seconds for r in results)
        reason = last.reason if len(results) == 1 else "; ".join(
            f"{r.mutation.expect.red[0]}: {r.outcome.value}" for r in results) + f" ({last.reason})"
        if outcome is MutationOutcome.SURVIVED:
            reason = f"Survived: {m.description} [{m.operator}] at {m.file}:{m.line}:{m.col}: {reason}"
        found.append(Finding(m, MutationResult(replace(last.mutation, id=mutation_id(m)), outcome, last.cause, reason, last.build, last.diffstat,
                                               last.line, last.gates, last.controls, seconds, last.cached), by))
    return found
