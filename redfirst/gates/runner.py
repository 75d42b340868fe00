"""Run gates: build, drive, keep every raw byte in the store, then grade the record.

The runner never decides a verdict itself: it seals the raw record first and calls
redfirst.gates.grade on it, exactly as `gates regrade` does later.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redfirst
from redfirst import process, scrub
from redfirst.gates import drivers, parsers, read_hook, reads
from redfirst.gates.config import Project
from redfirst.gates.drivers import Invocation
from redfirst.gates.grade import Graded, grade
from redfirst.gates.model import Gate
from redfirst.gates.proven import project_tree_key
from redfirst.gates.record import (
    BASELINE,
    BUILD_OUT,
    ENUM_OUT,
    EVIDENCE,
    INPUTS,
    JUNIT,
    STDERR,
    STDOUT,
    Binding,
    GradingContext,
    Record,
    Step,
    Subject,
)
from redfirst.gates.store import Store
from redfirst.verdict import Cause, Verdict

_ENV_ALLOW = re.compile(r"^(PATH|LANG|LC_[A-Z]+|TZ|CI|PYTHON[A-Z_]*|VIRTUAL_ENV|CUDA_[A-Z_]+|NVIDIA_[A-Z_]+|"
                        r"GITHUB_(SHA|REF|RUN_ID|REPOSITORY|WORKFLOW|JOB)|SLURM_[A-Z_]+|OMP_NUM_THREADS|"
                        r"GATES_[A-Z_]+|REDFIRST_[A-Z_]+)$")
_JOB_FILES = frozenset({"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE"})


@dataclass(frozen=True)
class GateResult:
    gate_id: str
    verdict: Verdict
    cause: Cause | None
    reason: str
    counts: dict[str, Any] = field(default_factory=dict)
    evidence_id: str | None = None
    kind: str | None = None
    requires: dict[str, Any] = field(default_factory=dict)
    exit_only: str | None = None
    source: str = ""
    duration_s: float = 0.0
    # a verdict other than GREEN: the failed cases its output shows ({id, message, file, line}),
    # how many more failed, and the end of its output (redfirst.gates.grade.grade)
    failures: tuple[dict[str, Any], ...] = ()
    more_failures: int = 0
    tail: str = ""


def recorded_env(env: Mapping[str, str], declared: Sequence[str], secret_names: Sequence[str] = ()) -> dict[str, str]:
    """The allowlisted environment a record keeps, secrets redacted."""
    kept = {}
    for key, value in env.items():
        if key in declared or _ENV_ALLOW.match(key):
            kept[key] = "<redacted>" if scrub.is_secret_name(key, secret_names) else value
    return dict(sorted(kept.items()))


def _mutation_paths(root: Path) -> list[str]:
    try:
        from redfirst.gates.config import load_project

        paths = load_project(root).section("mutations").get("paths", ["mutations"])
    except Exception:    # a broken redfirst.yaml is reported where it is loaded, not here
        paths = ["mutations"]
    return [str(p).strip("/") for p in paths if isinstance(p, str) and p.strip("/")] if isinstance(paths, list) \
        else ["mutations"]


def source_state(root: Path) -> dict[str, Any]:
    """Commit and dirty flag of the root's repository: two git calls per `gates run`."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        except OSError:
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    # Untracked files count (a gate may read them); the evidence store and mutation files
    # (declarations `mutate` reads, never a gate) are not what a gate ran on.
    status = git("status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude).redfirst",
                 *(f":(exclude,glob){p}/**/*.yaml" for p in _mutation_paths(root)))
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _copy_inputs(gate: Gate, root: Path, folder: Path) -> None:
    # Files named under `values:` travel with the record, so regrading needs no checkout.
    for spec in gate.value_specs.values():
        if spec.file:
            src = (root / spec.file).resolve()
            if src.is_file() and src.is_relative_to(root.resolve()):
                dst = folder / INPUTS / spec.file
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)


def _stat(path: Path | None) -> tuple[int, int, int] | None:
    try:
        st = path.stat() if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_mtime_ns, st.st_size)


def _drop_links(folder: Path) -> list[str]:
    """Remove every symbolic link the program left in the run folder (its evidence folder
    included): a link points at bytes the record cannot hash. Returns what was removed."""
    dropped = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            dropped.append(path.relative_to(folder).as_posix())
            path.unlink()
    if not (folder / EVIDENCE).is_dir():
        (folder / EVIDENCE).mkdir()
    return dropped


def _pythonpath(existing: str | None) -> str:
    # The folder that holds our `redfirst` package, so a child `python -m redfirst...` started from
    # a project's folder imports this install. A path the gate or the caller set comes first: it
    # may hold another redfirst on purpose.
    ours = str(Path(redfirst.__file__).resolve().parent.parent)
    return os.pathsep.join([*([existing] if existing else []), ours])


@dataclass
class RunContext:
    """What one `gates run` shares between its gates."""

    project: Project
    store: Store
    source: dict[str, Any]
    lease: str | None = None
    lease_wait: float = 0.0
    progress: Callable[[str], None] | None = None
    skip_build: bool = False          # a mutation's own build replaced the gates' builds
    brief: bool = False               # failures are expected (a mutated tree): one line each
    lock: threading.Lock = field(default_factory=threading.Lock)
    # what the runs are for (a mutation's id, patch and tree: redfirst.gates.record.Binding);
    # None: the untouched tree here, its tree key worked out once, when the first record is made
    subject: Subject | None = None

    def bound_to(self) -> Subject:
        with self.lock:
            if self.subject is None:
                self.subject = Subject(BASELINE, BASELINE, project_tree_key(self.project))
            return self.subject

    def say(self, message: str) -> None:
        if self.progress:
            with self.lock:
                self.progress(message)


@dataclass(frozen=True)
class Placement:
    """Where a gate runs: context for the record, extra environment, an argv prefix (a Slurm
    `srun` step), and a check whether the lease was lost while it ran."""

    context: GradingContext
    env: dict[str, str] = field(default_factory=dict)
    prefix: tuple[str, ...] = ()
    lost: Callable[[], str | None] = lambda: None


@contextlib.contextmanager
def _placement(gate: Gate, ctx: RunContext) -> Iterator[Placement]:
    """A requirement no box meets yields a context with `unmet`, which grades NO_DECISION."""
    needs_lease = ctx.lease is not None or gate.requires.device == "cuda"
    if not needs_lease:
        yield Placement(GradingContext({"box": "local"}))
        return
    from redfirst.gates import leasing

    try:
        # Inside a leased command (a `mutate --lease/--slurm` worker) its slots are this process tree's already.
        held = leasing.enclosing(gate, root=ctx.project.root) if ctx.lease is None else None
    except leasing.Unsatisfiable as e:
        yield Placement(GradingContext(unmet=str(e)))
        return
    if held is not None:
        # The enclosing lease was checked where it was granted (a fleet worker's, Slurm's allocation).
        yield Placement(GradingContext({"box": "local", **held[0]}), lost=held[1])
        return
    try:
        with leasing.lease_for(gate, ctx.lease, ctx.lease_wait, root=ctx.project.root) as leased:
            unmet = leasing.unmet_where_it_runs(gate, leased.identity)
            if unmet is not None:   # nothing runs: the lease is released as the block ends
                yield Placement(GradingContext({**leased.identity, "box": leased.box}, unmet=unmet))
                return
            yield Placement(GradingContext({**leased.identity, "box": leased.box}), dict(leased.env),
                            tuple(leased.run_prefix), leased.lost)
    except (leasing.Unsatisfiable, leasing.NotGranted) as e:
        yield Placement(GradingContext(unmet=str(e) or f"no box could serve the gate ({type(e).__name__})"))


def _frameworks() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in ("torch", "triton", "cupy-cuda13x", "cupy-cuda12x"):
        try:
            found[name] = metadata.version(name)  # read from the installed metadata: nothing is imported
        except metadata.PackageNotFoundError:
            continue
    return found


def _sha256_of_program(argv: Sequence[str] | str, cwd: Path, env: Mapping[str, str]) -> str | None:
    """sha256 of what ran: the program file (a binary or script), or the shell text."""
    import hashlib

    if isinstance(argv, str):
        return hashlib.sha256(argv.encode()).hexdigest()
    if not argv:
        return None
    found = shutil.which(argv[0], path=env.get("PATH")) if "/" not in argv[0] else str(cwd / argv[0])
    try:
        st = os.stat(found) if found else None
    except OSError:
        return None
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    # The same file (inode, size, change time) hashes the same: a batch of runs of one
    # interpreter or binary reads it once.
    key = (str(found), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _program_sha256:
        from redfirst.gates.record import sha256_file

        _program_sha256[key] = sha256_file(Path(str(found)))
    return _program_sha256[key]


_program_sha256: dict[tuple[str, int, int, int, int, int], str] = {}


def run_gate(gate: Gate, ctx: RunContext) -> GateResult:
    return execute(gate, ctx).finish()


@dataclass(frozen=True)
class Executed:
    """A gate that has run and left its raw record in its run folder, not yet sealed or
    graded: everything after this reads the folder only, never the tree, so the tree may
    change (a mutation restored) before `finish`."""

    gate: Gate
    ctx: RunContext
    folder: Path
    record: Record
    scratch: tuple[Path, ...] = ()     # the run's own folders outside the record (Invocation.scratch)
    read_set: reads.ReadSet | None = None   # what the run read, written into the record here

    def finish(self) -> GateResult:
        if self.read_set is not None:
            reads.write(self.folder, self.read_set)
        # Seal first, then grade the sealed folder: what is stored is exactly what was graded.
        final, sealed = self.ctx.store.seal(self.folder, self.record)
        graded = grade(sealed, final, self.gate)
        self.ctx.store.write_summary(final, _summary(self.gate, graded, self.ctx.project.root))
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)
        return _result(self.gate, graded, sealed.id, _duration(self.record), self.ctx.project.root)


def execute(gate: Gate, ctx: RunContext, while_running: Callable[[], None] | None = None,
            then: Gate | None = None, edit: tuple[str, bytes] | None = None) -> Executed:
    """Run the gate (build, drive, enumerate) and write its raw record; `Executed.finish` seals
    and grades it. `while_running` is called once: while the program runs where the driver can
    start it and wait for it apart (pytest-warm), else before it starts. The caller's other work
    (finishing the previous run) then overlaps this one. `then`: the gate the caller runs next
    on this tree, where it knows it, and `edit` the file it finds edited then (Driver.ahead)."""
    folder = ctx.store.new_run()
    (folder / EVIDENCE).mkdir()
    started = _now()
    driver = drivers.get(gate.driver.type)
    inv = driver.invocation(gate, ctx.project.root, folder / EVIDENCE, ctx.brief)
    if then is not None:
        inv = driver.ahead(inv, gate, then, ctx.project.root, ctx.brief, edit)
    declared = dict(gate.driver.env)
    # The code under test must not write into the CI job's step outputs, summary or environment.
    inherited = {k: v for k, v in os.environ.items() if k not in _JOB_FILES}
    base_env = {**inherited, **declared,
                "PYTHONPATH": _pythonpath(declared.get("PYTHONPATH", os.environ.get("PYTHONPATH")))}
    build_step = main_step = enum_step = None
    with _placement(gate, ctx) as placement:
        facts = placement.context
        if gate.requires.device == "cuda" and _frameworks():
            # a CUDA record names the torch/CuPy/Triton it could import
            facts = facts.with_facts(placement={**facts.placement, "frameworks": _frameworks()})
        env = {**base_env, **placement.env, **dict(inv.env), "GATES_EVIDENCE": str(folder / EVIDENCE)}
        report = folder.with_name(folder.name + ".reads")    # beside the record, never in it
        if driver.reports_reads() and not placement.prefix:
            env[read_hook.ENV] = str(report)
        if gate.driver.option("hazard", None) is not None:
            # a hazard run is kept beside the gate's own runs: its record says so, and regrade re-injects it
            facts = facts.with_facts(hazard=str(gate.driver.option("hazard", None)))
        if ctx.skip_build and gate.build is not None:
            facts = facts.with_facts(build_replaced="the build was run by the caller (a mutation's build)")
        refused = folder.with_name(folder.name + ".lease-refused")   # beside the record, never in it
        if placement.prefix:
            from redfirst.gates import leasing
            env = {**env, **leasing.refusal_env(refused)}
        if not facts.unmet:
            build_step = _build(gate, ctx, placement, env, folder)
            if build_step is None or (build_step.exited.returncode == 0 and build_step.exited.started):
                main_step, facts = _drive(gate, ctx, inv, placement, env, folder, facts, while_running)
                while_running = None
                enum_step = _enumerate(gate, inv, env, folder, main_step)
        if refused.is_file():
            facts = facts.with_facts(lease_refused=refused.read_text(errors="replace").strip() or
                                     "the lease's wrapper refused to run the command")
            refused.unlink()
        read_set = _read_set(gate, driver, ctx, placement, build_step, main_step, report)
        report.unlink(missing_ok=True)
        record = _record(gate, ctx, placement, env, base_env, folder, facts, (build_step, main_step, enum_step),
                         started)
    if while_running is not None:
        while_running()      # nothing ran: the caller's work is still done, and once
    return Executed(gate, ctx, folder, record, inv.scratch, read_set)


def _read_set(gate: Gate, driver: drivers.Driver, ctx: RunContext, placement: Placement, build: Step | None,
              main: Step | None, report: Path) -> reads.ReadSet:
    """What the run read under the root (redfirst.gates.reads), from its program's report."""
    if not driver.reports_reads():
        return reads.ReadSet.not_known(f"driver {gate.driver.type} does not report what its program reads")
    if placement.prefix:
        return reads.ReadSet.not_known("the gate ran as a step on a leased box: what it read there is not seen")
    if main is None:
        return reads.ReadSet.not_known("the gate's program did not run")
    root = ctx.project.root
    seen = reads.observed(report, root, (ctx.store.state_dir, ctx.project.state_dir), _named_files(gate, root))
    if build is not None:    # what the program read outside the root is known all the same
        return reads.ReadSet.not_known("the gate's build ran: what a build command reads is not seen", seen.outside)
    return seen


def _named_files(gate: Gate, root: Path) -> list[str]:
    """Root-relative files a gate names that its run reads: its pytest targets and every conftest.py
    from the root down to them, its `values:` files."""
    found = [spec.file for spec in gate.value_specs.values() if spec.file]
    cwd = (root / gate.driver.cwd).resolve()
    top = root.resolve()
    for target in drivers.runs_pytest_targets(gate) or ():
        path = (cwd / target.split("::")[0]).resolve()
        if not path.is_relative_to(top):
            continue
        if path.is_file():
            found.append(path.relative_to(top).as_posix())
        folder = path if path.is_dir() else path.parent
        while folder.is_relative_to(top):
            if (folder / "conftest.py").is_file():
                found.append((folder / "conftest.py").relative_to(top).as_posix())
            if folder == top:
                break
            folder = folder.parent
    return found


def _on_box(placement: Placement, command: Sequence[str] | str) -> Sequence[str] | str:
    # A leased box runs the command as a step of its allocation (Slurm's srun).
    if not placement.prefix:
        return command
    return [*placement.prefix, *(["/bin/sh", "-c", command] if isinstance(command, str) else command)]


def _build(gate: Gate, ctx: RunContext, placement: Placement, env: Mapping[str, str], folder: Path) -> Step | None:
    """The gate's build, unless it has none or the caller ran it."""
    if gate.build is None or ctx.skip_build:
        return None
    ctx.say(f"{gate.id}: build")
    exited = process.run(_on_box(placement, gate.build), cwd=ctx.project.root, env=dict(env),
                         stdout=folder / BUILD_OUT, stderr=None, timeout=gate.build_timeout)
    return Step(gate.build if isinstance(gate.build, str) else list(gate.build), exited)


_REPORT_LOCKS: dict[str, threading.Lock] = {}
_REPORT_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _report_of_its_own(report: Path | None) -> Iterator[None]:
    """Held while a program whose JUnit report is `report` runs and the report is taken: runs
    naming one report path (two gates under `gates run --jobs`) take turns. A caller may rely on:
    a report that changed while it held this was written by its own run, never by another gate's."""
    if report is None:
        yield
        return
    with _REPORT_LOCKS_GUARD:
        lock = _REPORT_LOCKS.setdefault(os.path.realpath(report), threading.Lock())
    with lock:
        yield


def _drive(gate: Gate, ctx: RunContext, inv: Invocation, placement: Placement, env: Mapping[str, str],
           folder: Path, facts: GradingContext,
           while_running: Callable[[], None] | None) -> tuple[Step, GradingContext]:
    """The driver's program, with what the record must say about it (what ran, its JUnit report)."""
    own = inv.junit if inv.junit is not None and inv.junit != folder / JUNIT else None
    with _report_of_its_own(own):
        return _drive_alone(gate, ctx, inv, placement, env, folder, facts, while_running)


def _drive_alone(gate: Gate, ctx: RunContext, inv: Invocation, placement: Placement, env: Mapping[str, str],
                 folder: Path, facts: GradingContext,
                 while_running: Callable[[], None] | None) -> tuple[Step, GradingContext]:
    ctx.say(f"{gate.id}: run")
    junit_before = _stat(inv.junit)
    command: Sequence[str] | str = inv.argv[0] if len(inv.argv) == 1 and isinstance(
        gate.driver.run, str) else inv.argv
    facts = facts.with_facts(ran=True, ran_sha256=_sha256_of_program(command, inv.cwd, env))
    command = _on_box(placement, command)
    if inv.in_process is not None and not placement.prefix:
        exited = inv.in_process(inv.cwd, dict(env), folder / STDOUT, folder / STDERR, gate.driver.timeout,
                                while_running)
    else:
        if while_running is not None:
            while_running()
        exited = process.run(command, cwd=inv.cwd, env=dict(env), stdout=folder / STDOUT,
                             stderr=folder / STDERR, timeout=gate.driver.timeout)
    if inv.junit is not None and inv.junit != folder / JUNIT:
        # Only a report this run wrote is evidence; one left from before is not.
        if inv.junit.is_file() and _stat(inv.junit) != junit_before:
            shutil.copyfile(inv.junit, folder / JUNIT)
        else:
            facts = facts.with_facts(junit_missing=f"{ctx.project.relative(inv.junit)} was not written by this run"
                                     + (" (a report from before the run is there)" if junit_before else ""))
    return Step(list(command) if not isinstance(command, str) else command, exited), facts


def _enumerate(gate: Gate, inv: Invocation, env: Mapping[str, str], folder: Path, main: Step) -> Step | None:
    """The format's listing of the tests the run selected (`ctest -N`), where it has one."""
    counts_format = drivers.get(gate.driver.type).counts_format or gate.driver.format
    if counts_format not in parsers.REGISTRY or not main.exited.started:
        return None
    argv = parsers.get(counts_format).enumerate_argv(gate.driver.run)
    if argv is None:
        return None
    exited = process.run(argv, cwd=inv.cwd, env=dict(env), stdout=folder / ENUM_OUT, stderr=None,
                         timeout=gate.driver.timeout)
    return Step(argv, exited)


def _record(gate: Gate, ctx: RunContext, placement: Placement, env: Mapping[str, str], base_env: Mapping[str, str],
            folder: Path, facts: GradingContext, steps: tuple[Step | None, Step | None, Step | None],
            started: str) -> Record:
    """The raw record of the run folder, once nothing in it can point elsewhere or hold a secret."""
    lost = placement.lost()
    if lost:
        facts = facts.with_facts(lease_lost=lost)
    links = _drop_links(folder)
    if links:
        facts = facts.with_facts(evidence_links=tuple(links))
    _copy_inputs(gate, ctx.project.root, folder)
    # The caller's and the gate's variables; not the lease's own (its fencing token is identity, not a secret).
    secrets = scrub.secret_values(base_env, gate.driver.env, ctx.project.secret_names)
    scrubbed = scrub.scrub_folder(folder, secrets)
    if scrubbed:
        facts = facts.with_facts(secrets_scrubbed=tuple(scrubbed))
    build, main, enumerate_ = steps
    record = Record(
        gate_id=gate.id,
        gate_file=ctx.project.relative(gate.source.file),
        gate_document=gate.document,
        root=str(ctx.project.root),
        cwd=gate.driver.cwd,
        env=recorded_env(env, [k for k, _ in gate.driver.env], ctx.project.secret_names),
        source=ctx.source,
        context=facts,
        build=build,
        main=main,
        enumerate=enumerate_,
        started_utc=started,
        finished_utc=_now(),
        redfirst=redfirst.__version__,
        binding=Binding.of(ctx.bound_to(), gate.document, redfirst.__version__),
    )
    if secrets:
        record = Record.from_json(scrub.scrub_json(record.to_json(), secrets))
    return record


def _duration(record: Record) -> float:
    steps = [s for s in (record.build, record.main, record.enumerate) if s is not None]
    return sum(s.exited.duration_s for s in steps)


def _summary(gate: Gate, graded: Graded, root: Path) -> dict[str, Any]:
    o = graded.outcome
    hazard = gate.driver.option("hazard", None)
    return {"gate": gate.id, "verdict": o.verdict.value, "cause": o.cause.value if o.cause else None,
            "reason": o.reason, "counts": graded.counts, **({"hazard": str(hazard)} if hazard is not None else {}),
            **({"failures": failures_json(gate, graded, root), "more_failures": graded.more_failures} if graded.failures else {})}


def failures_json(gate: Gate, graded: Graded, root: Path) -> list[dict[str, Any]]:
    """The failed cases of a graded run as every report shows them: id, message, file, line.

    A caller may rely on: `file` is a path relative to the project `root` of a file that exists
    inside it (the gate's `cwd` joined to the path the framework printed, `..` and symbolic links
    resolved), or None with `line` None: a place in the standard library, a dependency, a scratch
    copy, a file that does not exist or any file outside the project is never shown as the
    failure's place (the table, JUnit, the HTML page and GitHub annotations all read this)."""
    top = root.resolve()
    out = []
    for f in graded.failures:
        place: dict[str, Any] = {"file": None, "line": None}
        if f.file:
            try:
                at = (top / gate.driver.cwd / f.file).resolve()
                inside = at.relative_to(top) if at.is_file() else None
            except (ValueError, OSError, RuntimeError):
                inside = None
            if inside is not None and inside.parts:
                place = {"file": inside.as_posix(), "line": f.line if f.line and f.line > 0 else None}
        out.append({**dataclasses.asdict(f), **place})
    return out


def _result(gate: Gate, graded: Graded, evidence_id: str | None, duration: float, root: Path) -> GateResult:
    o = graded.outcome
    r = gate.requires
    requires = {"device": r.device, "gpus": r.gpus, **({"select": r.select} if r.select else {}),
                **({"whole_box": True} if r.whole_box else {})}
    return GateResult(gate.id, o.verdict, o.cause, o.reason, graded.counts, evidence_id, gate.kind, requires,
                      gate.exit_only, str(gate.source), duration, tuple(failures_json(gate, graded, root)), graded.more_failures,
                      graded.tail)


def unproven(result: GateResult) -> GateResult:
    return GateResult(**{**result.__dict__, "verdict": Verdict.NO_DECISION, "cause": Cause.EVIDENCE,
                         "reason": "no proof that this gate can fail (run `mutate` or `gates red-first`); "
                                   f"it was {result.verdict.value} on its own"})


def run_all(gates_: Sequence[Gate], ctx: RunContext, jobs: int = 1) -> list[GateResult]:
    """Run independent gates on `jobs` threads (each gate is its own process tree). A caller may
    rely on: where a run rewrote, deleted or chmodded a file git tracks, no result is GREEN (the
    gates read a tree other than the one they were asked to grade, in an order -n decides)."""
    from redfirst.gates.treekey import tracked

    before = tracked(ctx.project.root)
    results = _run_all(gates_, ctx, jobs)
    said = rewritten(before, ctx.project.root)
    if said is None:
        return results
    ctx.say(said)
    return [r if r.verdict is not Verdict.GREEN else GateResult(**{
        **r.__dict__, "verdict": Verdict.NO_DECISION, "cause": Cause.EVIDENCE, "reason": f"{said}; it was GREEN"})
        for r in results]


def rewritten(before: Mapping[str, str], root: Path) -> str | None:
    """Why no GREEN can stand where the files git tracks under `root` are no longer what they were
    (`before`: `treekey.tracked` when the gates started), or None: a gate's run rewrote, deleted or
    chmodded one, so gates read a tree other than the one they were asked to grade."""
    from redfirst.gates.treekey import tracked

    after = tracked(root)
    changed = sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))
    if not changed:
        return None
    return (f"a gate's run rewrote tracked files ({', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''}): "
            "the gates read a tree other than the one they were asked to grade; restore it "
            "(git checkout -- FILE) and keep the tests from writing into the tree")


def _run_all(gates_: Sequence[Gate], ctx: RunContext, jobs: int) -> list[GateResult]:
    drivers.announce(gates_, ctx.project.root)

    def one(gate: Gate) -> GateResult:
        result = run_gate(gate, ctx)
        ctx.say(f"{gate.id}: {result.verdict.value}")
        return result

    if ctx.lease is not None:
        from redfirst.gates import leasing

        # Scarcest requirements first; each gate waits for its own lease, so across several
        # boxes they run concurrently whatever -n says.
        order = leasing.placement_order(gates_, ctx.lease, ctx.project.root)
        results = dict(zip(order, _map(one, order, max(jobs, min(len(order), 16))), strict=True))
        return [results[g] for g in gates_]
    return _map(one, gates_, jobs)


def _map(one: Callable[[Gate], GateResult], gates_: Sequence[Gate], jobs: int) -> list[GateResult]:
    if jobs <= 1 or len(gates_) <= 1:
        return [one(g) for g in gates_]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, gates_))


__all__ = ["Executed", "GateResult", "RunContext", "execute", "run_all", "run_gate", "source_state", "unproven"]
