"""The mutation engine: baseline on the untouched tree, then each mutation applied in a
workspace, built, its gates run through the gate engine (never re-implemented here),
decided by `outcome.decide`, restored byte for byte, proven and cached."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from redfirst.gates import drivers, treekey
from redfirst.gates.api import EngineRunner, GateRequest, GateRunner, Subject
from redfirst.gates.model import Gate
from redfirst.gates.reads import ReadSet, of_record
from redfirst.gates.treekey import TreeState
from redfirst.mutations import cache, compiled, harness, timeouts, warmth
from redfirst.mutations.anchor import AnchorError, Applied, apply_anchor
from redfirst.mutations.builds import (
    BuildStep,
    build_outputs,
    build_steps,
    builds_ran,
    outdate_outputs,
    outside_reads,
    run_steps,
    seed,
)
from redfirst.mutations.model import Mutation
from redfirst.mutations.outcome import KILL_CAUSES, BuildStatus, GateSeen, collection_broken, decide, unread
from redfirst.mutations.workspaces import Workspace, open_workspace
from redfirst.verdict import Cause, MutationOutcome, Verdict

Progress = Callable[[str], None]


@dataclass(frozen=True)
class MutationResult:
    mutation: Mutation
    outcome: MutationOutcome
    cause: Cause | None
    reason: str
    build: BuildStatus
    diffstat: str = ""
    line: int | None = None
    gates: tuple[GateSeen, ...] = ()         # the expected-red gates, as seen under the mutation
    controls: tuple[GateSeen, ...] = ()
    seconds: float = 0.0
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # what its gates read, on the untouched tree and under the mutation (None: not known here)
    reads: ReadSet | None = field(default=None, hash=False, compare=False)

    def record(self) -> dict[str, Any]:
        """The JSON-able form, used by the cache and by `--json`."""
        def gate(g: GateSeen) -> dict[str, Any]:
            return {"gate": g.gate_id, "verdict": g.verdict.value, "cause": g.cause.value if g.cause else None,
                    "reason": g.reason, "counts": g.counts, "evidence": g.evidence_id}
        return {"id": self.mutation.id, "outcome": self.outcome.value,
                "cause": self.cause.value if self.cause else None, "reason": self.reason,
                "file": self.mutation.file, "line": self.line, "diffstat": self.diffstat,
                "mode": self.mutation.mode, "build": {"state": self.build.state, "reason": self.build.reason},
                "gates": [gate(g) for g in self.gates], "controls": [gate(g) for g in self.controls],
                "seconds": round(self.seconds, 3), "cached": self.cached, "source": str(self.mutation.source),
                **({"lease": self.extra["lease"]} if "lease" in self.extra else {})}

    @classmethod
    def from_record(cls, mutation: Mutation, data: Mapping[str, Any]) -> MutationResult:
        def gate(d: Mapping[str, Any]) -> GateSeen:
            return GateSeen(d["gate"], Verdict(d["verdict"]), Cause(d["cause"]) if d["cause"] else None,
                            d["reason"], dict(d["counts"] or {}), d["evidence"])
        return cls(mutation, MutationOutcome(data["outcome"]), Cause(data["cause"]) if data["cause"] else None,
                   data["reason"], BuildStatus(data["build"]["state"], data["build"]["reason"]),
                   data["diffstat"], data["line"], tuple(gate(g) for g in data["gates"]),
                   tuple(gate(g) for g in data["controls"]), data["seconds"], cached=True)


@dataclass(frozen=True)
class Baseline:
    builds: dict[str, BuildStatus]           # build command (as text) -> status on the untouched tree
    gates: dict[str, GateSeen]
    # gate id -> why it runs cold for the whole run: its warm and cold baselines differ (warmth)
    cold: dict[str, str] = field(default_factory=dict)



def _applied(m: Mutation, original: bytes) -> Applied | AnchorError:
    """The mutation applied to its file's bytes, or why not."""
    try:
        return apply_anchor(original.decode("utf-8", errors="surrogateescape"), m.anchor, m.replace, m.occurrence)
    except AnchorError as e:
        return e


def _unparsable(m: Mutation, found: Applied | AnchorError) -> str | None:
    return _syntax_error(m, found.text) if isinstance(found, Applied) else None


def _syntax_error(m: Mutation, text: str) -> str | None:
    """A Python target that no longer parses, with no build of its own to say so: no gate
    run can make that a kill (with `expect: {build: fails}` the gates' runs decide)."""
    if m.build is not None or m.expect.build == "fails" or not m.file.endswith(".py"):
        return None
    try:
        compile(text, m.file, "exec", dont_inherit=True)
    except SyntaxError as e:
        return (f"the mutation is not valid Python (SyntaxError at {m.file}:{e.lineno}: {e.msg}) and has no "
                "build: never a kill")
    except ValueError as e:      # source with null bytes
        return f"the mutation is not valid Python ({e}) and has no build: never a kill"
    return None


def decided(m: Mutation, seen: Mapping[str, GateSeen], uncollected: Mapping[str, str]) -> bool:
    """Whether the gates seen so far decide the outcome on positive evidence whatever the
    rest do: an expected-red gate ran and stayed GREEN (SURVIVED), or every expected-red
    gate was killed and a control went RED (UNSCOPED). Anything short of a clean run
    (ERROR, NO_DECISION, a build failure, broken collection) leaves it to the full rule."""
    if uncollected or m.expect.build == "fails" or any(
            g.verdict in (Verdict.ERROR, Verdict.NO_DECISION) or g.cause is Cause.BUILD for g in seen.values()):
        return False
    if any(g in seen and seen[g].verdict is Verdict.GREEN for g in m.expect.red):
        return True
    killed = all(g in seen and seen[g].verdict is Verdict.RED and seen[g].cause in KILL_CAUSES for g in m.expect.red)
    return killed and any(g in seen and seen[g].verdict is Verdict.RED and seen[g].cause in KILL_CAUSES
                          for g in m.expect.green)


class GroupRunner(Protocol):
    """Runs a group of mutations of one mode elsewhere (redfirst.mutations.fleet: leased workers); `keep`
    is called with each result as it comes back, so a run killed midway keeps what finished."""

    def run_group(self, engine: Engine, mode: str, group: list[Mutation],
                  keep: Callable[[MutationResult], None]) -> list[MutationResult]: ...


T = TypeVar("T")
# How long a gate run waits for a lease other workers hold (the GPU of a CUDA gate) before it is
# NO_DECISION "busy" (DISCARDED): `mutate run --lease-wait` sets it, as it does for a fleet worker.
LEASE_WAIT_S = 600.0


class Shares(Generic[T]):
    """The mutations of a run, one contiguous share per worker in the selection's order (a gate's
    mutations are neighbours there): each worker runs its own gates one after another, which is
    what a warm process's standby guesses (pytest_warm/standby.py). A worker whose share is done
    takes the last half of the largest share left."""

    def __init__(self, group: Sequence[T], workers: int) -> None:
        size, extra = divmod(len(group), workers)
        self.shares: list[list[T]] = []
        start = 0
        for w in range(workers):
            end = start + size + (1 if w < extra else 0)
            self.shares.append(list(reversed(group[start:end])))     # popped from the end: in order
            start = end
        self.lock = threading.Lock()

    def take(self, worker: int) -> T | None:
        with self.lock:
            mine = self.shares[worker]
            if not mine:
                largest = max(self.shares, key=len)
                if not largest:
                    return None
                half = len(largest) // 2 or 1
                mine[:] = largest[:half]        # its tail, in order when popped from the end
                del largest[:half]
            return mine.pop()

    def peek(self, worker: int) -> T | None:
        """What `take` would give this worker next, were no share taken from before then."""
        with self.lock:
            mine = self.shares[worker]
            return mine[-1] if mine else None


class Engine:
    def __init__(self, root: Path, gates: Mapping[str, Gate], *, jobs: int = 1,
                 runner: GateRunner | None = None, progress: Progress | None = None,
                 use_cache: bool = True, prove: bool = True, unkeyed: Sequence[Path] = (),
                 fleet: GroupRunner | None = None, on_result: Callable[[MutationResult], None] | None = None,
                 lease_wait: float = LEASE_WAIT_S) -> None:
        self.root = root
        self.lease_wait = lease_wait        # a CUDA gate's wait for its GPU while other workers hold it
        self.gates = gates
        self.jobs = max(1, jobs)
        self.runner: GateRunner = runner or EngineRunner()
        self.progress = progress or (lambda line: None)
        self.use_cache = use_cache
        self.prove = prove
        self.unkeyed = tuple(unkeyed)       # folders left out of the cache's tree digest
        self.fleet = fleet                  # None: the groups run here, one worktree per worker
        self.on_result = on_result          # called with every result as it is decided (a fleet worker streams it)
        self.store_dir = root / ".redfirst"
        self._lock = threading.Lock()
        self._done = 0
        self._total = 0
        self.baselines: list[Baseline] = []     # each group's, as run (a shard report carries them)
        # (a workspace's top folder, the user's it copies) of every workspace opened (Workspace.mirrors)
        self._mirrors: list[tuple[str, str]] = []
        self.derived: dict[str, timeouts.Derived] = {}   # gate id -> its baseline run, its derived timeout
        self.cold: dict[str, str] = {}          # gate id -> why it runs cold (Baseline.cold)
        self.builds_run = 0                     # build commands run, baselines included
        self.tree = ""                          # the tree digest this run keys and proves by (redfirst.mutations.cache)
        # In place: each file's stamp at the start (real path -> treekey.stamp), the stamp each file
        # mutated had after redfirst restored it, and the mutated files someone else wrote meanwhile.
        self._stamps_from: dict[str, treekey.Stamp] = {}
        self._restored: dict[str, treekey.Stamp] = {}
        self._interfered: list[str] = []
        # mutation id -> (its file's bytes, what applying it to them gave, why that does not
        # parse): worked out while the worker's previous mutation ran (start_one)
        self._parsed: dict[str, tuple[bytes, Applied | AnchorError, str | None]] = {}
        self._outputs = compiled.Outputs(skip=(self.store_dir,))   # each worker's build outputs at its start

    # -- the batch -------------------------------------------------------------------
    def tree_state(self) -> TreeState:
        return TreeState.of(self.root, (*self.unkeyed, self.store_dir))

    def tree_key(self) -> str:
        return self.tree_state().digest

    def run(self, mutations: Sequence[Mutation]) -> list[MutationResult]:
        results: dict[str, MutationResult] = {}
        keys: dict[str, str] = {}
        self._total = len(mutations)
        pending: list[Mutation] = []
        # The tree as it is before anything runs: results are keyed on it (redfirst.mutations.cache) and
        # proofs are tied to its digest (redfirst.gates.proven).
        state = self.tree_state() if self.use_cache or self.prove or self.fleet is not None else None
        tree = state.digest if state is not None else ""
        # a fleet worker's results count only where it ran on this tree; every record is bound to it
        self.tree = tree or self.tree_key()
        # In place, each file's stamp as well: an edit put back before the end leaves the content.
        stamped = treekey.stamps(self.root, state.entries) if state is not None and self.fleet is None and any(
            m.mode == "in-place" for m in mutations) else {}
        self._stamps_from = {os.path.realpath(self.root / rel): st for rel, st in stamped.items()}
        self._restored, self._interfered = {}, []
        env = cache.environment() if self.use_cache else ""
        for m in mutations:
            target = self.root / m.file
            if not target.is_file():
                results[m.id] = MutationResult(m, MutationOutcome.ERROR, Cause.CONFIG,
                                               f"file not found: {m.file}", BuildStatus("none"))
                self._report(results[m.id])
                continue
            hit = None
            if self.use_cache and state is not None:
                keys[m.id] = cache.key(m, target.read_bytes(), (self.gates[g].document for g in m.expect.gates),
                                       state, env)
                hit = cache.load(keys[m.id], state)
            if hit is not None:
                results[m.id] = MutationResult.from_record(m, hit)
                if results[m.id].outcome is MutationOutcome.KILLED and self.prove:
                    # what it rests on is as it is now: run again, it would go RED again on this tree
                    self._store_proofs(results[m.id], state)
                self._report(results[m.id])
            else:
                pending.append(m)

        def keep(r: MutationResult) -> None:
            if r.outcome is MutationOutcome.KILLED and self.prove:
                self._store_proofs(r, state)
            if self.use_cache and not r.cached and state is not None:
                cache.store(keys[r.mutation.id], r.record(), r.reads, state)

        for mode in ("worktree", "commit", "in-place"):
            group = [m for m in pending if m.mode == mode]
            if group and mode != "in-place" and self.fleet is None:
                group = self._outside_config(group, results)
            if group:
                ran = (self.fleet.run_group(self, mode, group, keep) if self.fleet is not None
                       else self._run_group(mode, group))
                # In place the gates ran on the user's live tree: a result decided there rests on
                # the tree the run began on only if that is still the tree (an editor's save, a
                # test that writes a tracked file). Else it is reported, but neither filed nor a proof.
                moved = mode == "in-place" and self.fleet is None and state is not None \
                    and self.tree_state().digest != state.digest
                written = sorted({*treekey.written_since(self.root, stamped, self._restored), *self._interfered}) \
                    if mode == "in-place" and not moved and stamped else []
                if moved:
                    self.progress("the tree changed while the mutations ran in place: their results are not "
                                  "cached and prove nothing (run again on a tree left alone)")
                elif written:
                    self.progress(f"files were written while the mutations ran in place ({', '.join(written[:5])}"
                                  f"{', ...' if len(written) > 5 else ''}): their results are not cached and prove "
                                  "nothing (run again on a tree left alone)")
                    moved = True
                for r in ran:
                    results[r.mutation.id] = r
                    if self.fleet is None and not moved:
                        keep(r)
        return [results[m.id] for m in mutations]

    def _outside_config(self, group: list[Mutation], results: dict[str, MutationResult]) -> list[Mutation]:
        """The mutations of `group` a worktree can run as the user's tree would; those with a gate
        that runs pytest are ERROR where pytest's configuration lies above the repository (a
        worktree under the cache folder has none above it: its gates would run otherwise)."""
        from redfirst.mutations.workspaces.worktree import outer_pytest_config

        found = outer_pytest_config(self.root)
        if found is None:
            return group
        kept = []
        for m in group:
            gates = [self.gates[g] for g in m.expect.gates if g in self.gates]
            if any(drivers.runs_pytest(g) for g in gates):
                results[m.id] = MutationResult(
                    m, MutationOutcome.ERROR, Cause.CONFIG,
                    f"pytest's configuration {found} lies above the repository: a {m.mode} under the cache folder "
                    "would run its gates without it (and without the conftest.py files beside it); give the "
                    "mutation `mode: in-place`, or move the configuration into the repository", BuildStatus("none"))
                self._report(results[m.id])
            else:
                kept.append(m)
        return kept

    def _run_group(self, mode: str, group: list[Mutation]) -> list[MutationResult]:
        workers = min(self.jobs, len(group)) if mode != "in-place" else 1
        spaces: list[Workspace] = []
        try:
            for i in range(workers):
                spaces.append(open_workspace(mode, self.root, i))
                if spaces[-1].mirrors is not None:
                    ours, users = spaces[-1].mirrors
                    with self._lock:
                        self._mirrors += [(os.path.join(str(ours), ""), str(users)),
                                          (os.path.join(os.path.realpath(ours), ""), str(users))]
            baseline = self._baseline(spaces, group)
            self.baselines.append(baseline)
            self.cold.update(baseline.cold)
            self._derive_timeouts(spaces, baseline)
            todo = Shares(group, len(spaces))
            out: list[MutationResult] = []

            def work(space: Workspace) -> None:
                # A mutation's runs are sealed, graded and decided while the next
                # mutation's first program runs: the same thread, overlapped.
                pending: list[Callable[[], MutationResult]] = []

                def finish_previous() -> None:
                    while pending:
                        r = pending.pop()()
                        with self._lock:
                            out.append(r)
                        self._report(r)

                while True:
                    m = todo.take(spaces.index(space))
                    if m is None:
                        break
                    after = todo.peek(spaces.index(space))
                    done = self.start_one(space, m, baseline, finish_previous,
                                          then=after.expect.gates[:1] if after is not None else (), after=after)
                    finish_previous()      # when nothing ran for this one
                    pending.append(done)
                finish_previous()

            with ThreadPoolExecutor(max_workers=len(spaces)) as pool:
                for f in [pool.submit(work, s) for s in spaces]:
                    f.result()
            return out
        finally:
            for space in spaces:
                space.close()

    def _baseline(self, spaces: Sequence[Workspace], group: Sequence[Mutation]) -> Baseline:
        """The builds and every named gate once on the untouched tree; the gates are shared
        out over the workers' workspaces (identical untouched trees), one share each. The
        builds run in the first workspace; each other one is seeded with a copy of their
        build directories (or, where a build declares none or it cannot be copied, builds
        there too), so every worker's first mutation is an incremental build."""
        steps = {s.key: s for m in group for s in build_steps(m, self.gates)}
        gate_ids = list(dict.fromkeys(g for m in group for g in m.expect.gates))
        self.progress(f"baseline: {len(steps)} build(s) and {len(gate_ids)} gate(s) on the untouched tree")
        statuses = {k: self._count(run_steps([s], spaces[0].root)) for k, s in steps.items()}

        def prepare(space: Workspace) -> dict[str, BuildStatus]:
            return {k: statuses[k] if statuses[k].state != "ok" or seed(s, spaces[0].root, space.root)
                    else self._count(run_steps([s], space.root)) for k, s in steps.items()}

        with ThreadPoolExecutor(max_workers=max(1, len(spaces) - 1)) as pool:
            for other in pool.map(prepare, spaces[1:]):
                statuses.update({k: v for k, v in other.items() if statuses[k].state == "ok"})
        shares = [(space, gate_ids[i::len(spaces)]) for i, space in enumerate(spaces)]

        def run_share(space: Workspace, ids: list[str], cold: bool = False) -> list[GateSeen]:
            # Commit mode: the baseline runs on a scratch commit made as a mutated one is.
            untouched = getattr(space, "untouched", contextlib.nullcontext)
            with untouched():
                skip = builds_ran((self.gates[g] for g in ids if g in self.gates), steps)
                return self._start_gates(GateRequest(space.root, tuple(ids), self.store_dir, skip_build=skip,
                                                     cold=tuple(ids) if cold else (), subject=Subject(tree=self.tree),
                                                     lease_wait=self.lease_wait))()

        with ThreadPoolExecutor(max_workers=len(spaces)) as pool:
            found = pool.map(lambda share: run_share(*share), shares)
            seen = {g.gate_id: g for results in found for g in results}
        return Baseline(statuses, seen, self._warm_or_cold(spaces, seen, run_share))

    def _warm_or_cold(self, spaces: Sequence[Workspace], seen: dict[str, GateSeen],
                      run_share: Callable[[Workspace, list[str], bool], list[GateSeen]]) -> dict[str, str]:
        """Each warm gate's baseline once more, cold: where the two differ (warmth.warm_agrees) the
        gate runs cold from here on, its cold baseline in `seen`; gate id -> why."""
        warm = warmth.warm_gates(self.gates, seen)
        if not warm:
            return {}
        shares = [(space, warm[i::len(spaces)]) for i, space in enumerate(spaces) if warm[i::len(spaces)]]
        with ThreadPoolExecutor(max_workers=len(shares)) as pool:
            found = pool.map(lambda share: run_share(share[0], share[1], True), shares)
            cold = {g.gate_id: g for results in found for g in results}
        why: dict[str, str] = {}
        for gate_id in warm:
            differs = warmth.warm_agrees(seen[gate_id], cold[gate_id], self.store_dir) if gate_id in cold \
                else "its cold baseline gave no result"
            if differs is not None:
                why[gate_id] = differs
                seen[gate_id] = cold.get(gate_id, seen[gate_id])
                self.progress(f"{gate_id} runs cold: {differs}")
        return why

    def _count(self, status: BuildStatus) -> BuildStatus:
        with self._lock:
            self.builds_run += 1
        return status

    def _derive_timeouts(self, spaces: Sequence[Workspace], baseline: Baseline) -> None:
        """A gate that sets no timeout runs under mutations with one derived from its
        baseline run (timeouts.Derived: (its tests' seconds + 1) x 15 as mutmut, plus twice the
        rest of the run), not the 600 s default."""
        for gate_id, seen in baseline.gates.items():
            gate = self.gates.get(gate_id)
            took = timeouts.derived(self.store_dir, seen.evidence_id)
            if gate is None or took is None or seen.verdict is not Verdict.GREEN or timeouts.declares_timeout(gate):
                continue
            driver = drivers.get(gate.driver.type)
            cold = max((driver.cold_start_s(gate, space.root) for space in spaces), default=0.0)
            self.derived[gate_id] = dataclasses.replace(took, cold_s=cold)

    def _timeout_note(self, seen: Iterable[GateSeen]) -> str:
        notes = [f"{g.gate_id}: timeout derived from the baseline: {self.derived[g.gate_id].describe()}" for g in seen
                 if g.cause is Cause.TIMEOUT and g.gate_id in self.derived]
        return "; ".join(notes)

    # -- one mutation ----------------------------------------------------------------
    def run_one(self, space: Workspace, m: Mutation, baseline: Baseline) -> MutationResult:
        return self.start_one(space, m, baseline)()

    def start_one(self, space: Workspace, m: Mutation, baseline: Baseline,
                  while_running: Callable[[], None] | None = None,
                  then: Sequence[str] = (), after: Mutation | None = None) -> Callable[[], MutationResult]:
        """Apply the mutation, build, run its gates' programs and restore the tree; what
        is returned seals and grades those runs and decides the outcome (the tree is not
        needed for that). `while_running` is called at most once, while a gate runs. `then`:
        the gates this workspace runs next, where known (GateRequest.then); `after`: the
        mutation it runs next, where known: applied to its file ahead, its syntax checked while this
        one runs."""
        start = time.monotonic()

        def ended(outcome: MutationOutcome, cause: Cause, reason: str) -> Callable[[], MutationResult]:
            r = MutationResult(m, outcome, cause, reason, BuildStatus("none"), seconds=time.monotonic() - start)
            return lambda: r

        not_ready = self._not_ready(m, baseline)
        if not_ready is not None:
            return ended(MutationOutcome.ERROR, *not_ready)
        target = space.root / m.file
        original = target.read_bytes()
        known = self._parsed.pop(m.id, None)
        if known is not None and known[0] == original:
            found, unparsable = known[1:]
        else:
            found = _applied(m, original)
            unparsable = _unparsable(m, found)
        if isinstance(found, AnchorError):
            return ended(MutationOutcome.ERROR, Cause.CONFIG, f"{m.file}: {found}")
        applied = found
        # The worker's next mutation, applied to its file as it will be once this one is put back:
        # the request names that edit (GateRequest.then_edit), and its syntax check is done while
        # this one runs; start_one takes either only where the file then holds those bytes.
        ahead = self._apply_next(space, after, m, original)
        then_edit = (after.file, ahead[1].text.encode("utf-8", errors="surrogateescape")) \
            if after is not None and ahead is not None and isinstance(ahead[1], Applied) else None
        if after is not None and ahead is not None and while_running is not None:
            first, (base, next_found) = while_running, ahead

            def while_running() -> None:
                first()
                self._parsed[after.id] = (base, next_found, _unparsable(after, next_found))
        if unparsable is not None:
            return ended(MutationOutcome.DISCARDED, Cause.BUILD, unparsable)
        gates_done: Callable[[], list[GateSeen]] = list
        skipped: list[str] = []
        steps = build_steps(m, self.gates)
        outputs = build_outputs(space.root, steps)
        # C, C++, CUDA: counted only where the build compiled it (compiled.judge)
        at_start = self._outputs.base(space.root, outputs, lambda: run_steps(steps, space.root)) \
            if steps and outputs and compiled.compiled(m.file) else None
        uncounted: compiled.Judged | None = None
        real = os.path.realpath(target)
        watched = m.mode == "in-place" and real in self._stamps_from
        if watched and treekey.stamp(real) != self._restored.get(real, self._stamps_from[real]):
            self._interfered.append(m.file)     # written since the run began, or since redfirst restored it
        with space.mutated(m.file, applied.text.encode("utf-8", errors="surrogateescape"), m.id):
            written = treekey.stamp(real) if watched else None
            if outputs:
                outdate_outputs(target.resolve(), outputs)
            before = self._outputs.stamps(outputs) if at_start is not None else {}
            build = self._count(run_steps(steps, space.root)) if steps else BuildStatus("none")
            read_outside = outside_reads(space.root, outputs, (self.store_dir,)) if build.state == "ok" \
                else frozenset[str]()
            if at_start is not None and build.state == "ok":
                uncounted = self._outputs.judge(space.root, m.file, before, outputs)
            if build.state in ("none", "ok") and uncounted is None:
                # The builds ran here, once each: the gates skip theirs (DESIGN section 3).
                gates_done, skipped = self._gates_until_decided(space.root, m, while_running, then, then_edit)
            if watched and treekey.stamp(real) != written:
                self._interfered.append(m.file)     # written while the mutation was in place
        if watched:
            self._restored[real] = treekey.stamp(real)
        if outputs:
            outdate_outputs(target.resolve(), outputs)     # restored: newer than the mutated objects
        if uncounted is not None:
            r = MutationResult(m, uncounted.outcome, Cause.BUILD, uncounted.reason, build, applied.diffstat,
                               applied.line, seconds=time.monotonic() - start)
            return lambda: r

        ran = time.monotonic() - start

        def done() -> MutationResult:
            finishing = time.monotonic()
            seen = {g.gate_id: g for g in gates_done()}
            # Gates not run once the outcome was decided are not expected of it.
            judged = m if not skipped else dataclasses.replace(m, expect=dataclasses.replace(
                m.expect, red=tuple(g for g in m.expect.red if g in seen),
                green=tuple(g for g in m.expect.green if g in seen)))
            decision = unread(decide(judged, build, seen, self._uncollected(seen.values()),
                                     self._uncollected(seen.values(), by_harness=True)), m.file,
                              self._read_set(m, None, steps, seen.values()))
            cause, reason = decision.cause, decision.reason
            if decision.outcome is MutationOutcome.KILLED and any(
                    seen[g].cause is Cause.TIMEOUT for g in m.expect.red if g in seen):
                cause = Cause.TIMEOUT      # killed by timeout: what mutmut reports as "timeout"
            note = "; ".join(filter(None, [self._timeout_note(seen.values()), *(
                f"{g} ran cold: {self.cold[g]}" for g in m.expect.gates if g in self.cold)]))
            if note:
                reason = f"{reason} ({note})"
            if skipped:
                reason = f"{reason}; not run once decided: {', '.join(skipped)}"
            return MutationResult(
                m, decision.outcome, cause, reason, build, applied.diffstat, applied.line,
                tuple(seen[g] for g in m.expect.red if g in seen), tuple(seen[g] for g in m.expect.green if g in seen),
                ran + time.monotonic() - finishing, reads=self._read_set(m, baseline, steps, seen.values(), read_outside))
        return done

    def _read_set(self, m: Mutation, baseline: Baseline | None, steps: Sequence[BuildStep],
                  seen: Iterable[GateSeen], built_from: frozenset[str] = frozenset()) -> ReadSet:
        """What the result rests on in the tree: every file its gates read on the untouched tree
        (the baseline, unless None: anything else there would make it ERROR) and under the mutation; where a
        build ran, not known. A caller may rely on: the files known read outside the root, those the
        build's depfiles name (`built_from`) and those each gate's run read, are kept however the rest is."""
        found = ReadSet.not_known("a build ran: what a build command reads is not seen", built_from) if steps \
            else ReadSet()
        lost = False
        for g in [*(baseline.gates.get(g) for g in m.expect.gates if baseline is not None), *seen]:
            if g is None or g.evidence_id is None:
                lost = True      # what it read is not known, not even outside the root: the others' are kept
                continue
            found = found.union(of_record(self.store_dir / "evidence" / g.evidence_id))
        if lost:
            found = found.union(ReadSet.not_known("a gate run left no record"))
        return self._mirrored(found)

    def _mirrored(self, reads: ReadSet) -> ReadSet:
        """A file read outside the root under a worktree's top, as the user's file it copies (the
        worktree is gone when the result is filed; the user's file is what a later run reads)."""
        if not reads.outside:
            return reads
        with self._lock:
            mirrors = list(self._mirrors)
        out = set()
        for path in reads.outside:
            for ours, users in mirrors:
                if path.startswith(ours):
                    path = os.path.join(users, path[len(ours):])
                    break
            out.add(path)
        return dataclasses.replace(reads, outside=frozenset(out))

    @staticmethod
    def _apply_next(space: Workspace, m: Mutation | None, now: Mutation, original: bytes
                    ) -> tuple[bytes, Applied | AnchorError] | None:
        """`m`, the worker's next mutation, applied to its file's bytes as they will be once `now`
        is put back (`now`'s file: `original`; any other: as it is now), with those bytes; None
        where not known."""
        if m is None:
            return None
        try:
            base = original if m.file == now.file else (space.root / m.file).read_bytes()
        except OSError:
            return None
        return base, _applied(m, base)

    def _gates_until_decided(self, root: Path, m: Mutation, while_running: Callable[[], None] | None,
                             then: Sequence[str] = (), then_edit: tuple[str, bytes] | None = None
                             ) -> tuple[Callable[[], list[GateSeen]], list[str]]:
        """Run the mutation's gates one after another and stop once positive evidence
        decides its outcome (`decided`); the last gate run is graded later (overlapped).
        `then`: the gates this tree runs after this mutation's, where known, and `then_edit` the
        edit it holds then (GateRequest)."""
        gate_ids = list(m.expect.gates)
        if len(gate_ids) == 1:
            return self._start_gates(self._request(root, gate_ids, m, then, then_edit), while_running), []
        seen: dict[str, GateSeen] = {}
        for i, gate_id in enumerate(gate_ids[:-1]):
            request = self._request(root, [gate_id], m, [gate_ids[i + 1]])
            seen.update((g.gate_id, g) for g in self._start_gates(request, while_running)())
            while_running = None
            if decided(m, seen, {**self._uncollected(seen.values()), **self._uncollected(seen.values(), True)}):
                return (lambda: list(seen.values())), gate_ids[i + 1:]
        last = self._start_gates(self._request(root, gate_ids[-1:], m, then, then_edit), while_running)
        return (lambda: [*seen.values(), *last()]), []

    def _request(self, root: Path, gate_ids: Sequence[str], m: Mutation, then: Sequence[str] = (),
                 then_edit: tuple[str, bytes] | None = None) -> GateRequest:
        """The gates of mutation `m` on `root`, under the timeouts derived from the baseline."""
        skip = m.build is not None or builds_ran((self.gates[g] for g in gate_ids if g in self.gates),
                                                 (s.key for s in build_steps(m, self.gates)))
        return GateRequest(root, tuple(gate_ids), self.store_dir, skip, m.mode,
                           tuple((g, d.limit) for g, d in self.derived.items() if g in gate_ids), tuple(then),
                           then_edit, cold=tuple(g for g in gate_ids if g in self.cold),
                           subject=Subject(m.id, m.patch_digest, self.tree), lease_wait=self.lease_wait)

    def _start_gates(self, request: GateRequest,
                     while_running: Callable[[], None] | None = None) -> Callable[[], list[GateSeen]]:
        """The one call into the gate engine (redfirst.gates.api): programs run now, graded by the finisher."""
        finish = self.runner.start(request, while_running)
        return lambda: [GateSeen.of(r) for r in finish()]

    def _uncollected(self, seen: Iterable[GateSeen], by_harness: bool = False) -> dict[str, str]:
        """Gate id -> why pytest could not collect its tests under the mutation (`by_harness`: why
        its red shows no test failing as it ran, harness.not_a_kill)."""
        found = {}
        for g in seen:
            gate = self.gates.get(g.gate_id)
            runner = gate is not None and drivers.runs_pytest(gate)
            record = self.store_dir / "evidence" / g.evidence_id if g.evidence_id else None
            fmt = gate.driver.format if gate is not None else ""
            why = harness.not_a_kill(g, fmt, runner, record) if by_harness else collection_broken(g, runner, record,
                                                                                      fmt == "unittest")
            if why is not None:
                found[g.gate_id] = why
        return found

    def _not_ready(self, m: Mutation, baseline: Baseline) -> tuple[Cause, str] | None:
        for step in build_steps(m, self.gates):
            status = baseline.builds[step.key]
            if status.state != "ok":
                return Cause.BUILD, f"build not ok before mutation: {status.state} {status.reason}".strip()
        for g in m.expect.gates:
            seen = baseline.gates.get(g)
            if seen is None:
                return Cause.CONFIG, f"gate {g} gave no result before mutation"
            if seen.verdict is not Verdict.GREEN:
                return seen.cause or Cause.CONFIG, f"gate not green before mutation: {seen.describe()}"
        return None

    def _store_proofs(self, r: MutationResult, state: TreeState | None) -> None:
        """A proof rests on what a cached result would (redfirst.gates.rests): the whole tree, and
        each file its gates read outside the root."""
        from redfirst.gates.proofs import add_proof
        from redfirst.gates.rests import rests_on

        if state is None:
            return
        rests = rests_on(state, r.reads, whole_tree=True)
        for g in r.gates:
            if g.verdict is Verdict.RED:
                add_proof(self.root, g.gate_id, "mutation", r.mutation.id, [g.evidence_id] if g.evidence_id else [],
                          state.digest, rests)

    def _report(self, r: MutationResult) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        tag = " (cached)" if r.cached else f" {r.seconds:.1f}s"
        self.progress(f"[{done}/{self._total}] {r.mutation.id} {r.outcome.value}{tag}: {r.reason}")
        if self.on_result is not None:
            self.on_result(r)
