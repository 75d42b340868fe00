"""`mutate --lease auto|BOX -n N` and `mutate --slurm -n N`: the mutations run by N leased workers.

Each worker holds its own lease (one per worker, on a box or slot that satisfies every
`requires` of the gates it runs), and runs its share as `python -m redfirst.mutations.fleet` through
the lease's run prefix (the fenced `redfirst.leases.exec` wrapper, or an `srun` step inside the Slurm
allocation), so the gates' commands run on the leased slot. The worker streams each result
back as one JSON line as soon as it is decided; the client keeps it at once (cache, proofs),
so a client killed midway loses nothing that finished. A result is accepted only while the
lease is live. A worker that ends before finishing (its lease lost: fence, TTL, its job
cancelled; or it died) has its unfinished mutations re-queued once, to a new worker; lost
again, they are DISCARDED (no decision) naming both losses, never KILLED or SURVIVED. A lease
that cannot be had makes the mutations DISCARDED naming why.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from redfirst import tempdirs
from redfirst.gates import leasing
from redfirst.gates.model import Gate
from redfirst.leases.backends import Backend, open_backend
from redfirst.leases.config import ConfigError, LeasesConfig, load
from redfirst.leases.exec import REFUSED_FILE
from redfirst.leases.hold import Holding
from redfirst.leases.model import Lease, LeaseError, LeaseRequest, NotGranted, StaleLease, Unsatisfiable
from redfirst.leases.selector import SelectorError
from redfirst.mutations import shard
from redfirst.mutations.engine import Engine, MutationResult
from redfirst.mutations.model import Mutation
from redfirst.mutations.outcome import BuildStatus
from redfirst.verdict import Cause, MutationOutcome

DEFAULT_WAIT = 600.0
ATTEMPTS = 2                  # a worker's first run, and one re-queue to another worker
_UNSURE = (Cause.SIGNAL, Cause.TIMEOUT)   # what a lease's end looks like from inside: confirm before accepting
# A backend's own tool that hangs or cannot start (sinfo against a dead controller): no lease, never a traceback.
_BACKEND_FAULTS = (subprocess.TimeoutExpired, OSError)


def _fault(exc: BaseException) -> str:
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"lease backend: {' '.join(map(str, exc.cmd[:1]))} did not answer within {exc.timeout:g} s"
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class Target:
    """Where the workers run: a backend kind and a box name or `auto`."""

    backend: str
    box: str = leasing.AUTO

    def __str__(self) -> str:
        return f"{self.backend}:{self.box}"


@dataclass(frozen=True)
class Batch:
    """Mutations one worker runs; `lost` names the earlier workers that lost them."""

    ids: tuple[str, ...]
    lost: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ended:
    """What one worker came back with."""

    results: tuple[MutationResult, ...]
    unfinished: tuple[str, ...]
    why: str | None = None        # why it ended before finishing; None when it finished
    retry: bool = True            # False: another worker cannot do better (the lease can never be had)


@dataclass
class _Queue:
    """Batches waiting for a worker; `busy` counts those running (a running one may re-queue)."""

    batches: list[Batch] = field(default_factory=list)
    busy: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)

    def take(self) -> Batch | None:
        with self.cond:
            while not self.batches and self.busy:
                self.cond.wait()
            if not self.batches:
                return None
            self.busy += 1
            return self.batches.pop(0)

    def done(self, requeued: Batch | None) -> None:
        with self.cond:
            self.busy -= 1
            if requeued is not None:
                self.batches.append(requeued)
            self.cond.notify_all()


def config_of(root: Path) -> LeasesConfig:
    try:
        return load(root)
    except ConfigError as exc:
        raise FleetError(str(exc)) from None


class FleetError(Exception):
    """The fleet cannot start at all (a wrong `leases:` section): a usage error."""


def merged_gate(gates: Sequence[Gate]) -> Gate:
    """One gate whose `requires` holds every one of `gates`: a worker's lease must serve them all."""
    reqs = [g.requires for g in gates]
    cuda = any(r.device == "cuda" for r in reqs)
    gpus = max([max(r.gpus, 1) if r.device == "cuda" else r.gpus for r in reqs], default=0)
    select = ",".join(dict.fromkeys(r.select for r in reqs if r.select)) or None
    requires = dataclasses.replace(reqs[0], device="cuda" if cuda else "cpu", gpus=gpus, select=select,
                                   whole_box=any(_whole(g) for g in gates))
    return dataclasses.replace(gates[0], requires=requires, kind=None)


def _whole(gate: Gate) -> bool:
    return gate.requires.whole_box or (gate.kind or "").lower() == "timing"


class Fleet:
    """The engine's GroupRunner for leased workers (`Engine(fleet=Fleet(...))`)."""

    def __init__(self, root: Path, target: Target, workers: int, *, wait: float = DEFAULT_WAIT,
                 config: LeasesConfig | None = None) -> None:
        self.root = root
        self.target = target
        self.workers = max(1, workers)
        self.wait = wait
        self.config = config or config_of(root)
        self._backend: Backend | None = None
        self._seq = 0
        self._lock = threading.Lock()

    # -- the group -------------------------------------------------------------------
    def run_group(self, engine: Engine, mode: str, group: list[Mutation],
                  keep: Callable[[MutationResult], None]) -> list[MutationResult]:
        by_id = {m.id: m for m in group}
        out: dict[str, MutationResult] = {}

        def accept(r: MutationResult) -> None:
            with self._lock:
                out[r.mutation.id] = r
            keep(r)
            engine._report(r)

        try:
            request = self._request(engine, group)
        except (Unsatisfiable, SelectorError, LeaseError, *_BACKEND_FAULTS) as exc:
            for m in group:
                accept(_no_decision(m, f"no lease for the workers ({self.target}): {_fault(exc)}"))
            return [out[m.id] for m in group]
        count = 1 if mode == "in-place" else min(self.workers, len(group))   # in-place: one tree, one worker
        queue = _Queue([Batch(tuple(p)) for p in shard.partition([m.id for m in group], count) if p])

        def slot() -> None:
            while (batch := queue.take()) is not None:
                requeued = None
                try:
                    try:
                        ended = self._work(engine, batch, by_id, request, accept)
                    except (LeaseError, *_BACKEND_FAULTS) as exc:   # the lease's prefix or the worker could not start
                        ended = Ended((), tuple(i for i in batch.ids if i not in out),
                                      f"the worker could not be started: {_fault(exc)}", retry=False)
                    if ended.unfinished:
                        requeued = self._after_loss(batch, ended, by_id, accept)
                finally:
                    queue.done(requeued)

        threads = [threading.Thread(target=slot, name=f"mutate worker slot {i}") for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for m in group:     # every mutation has a result: one that none brought back is no decision
            if m.id not in out:
                accept(_no_decision(m, "no worker brought a result back"))
        return [out[m.id] for m in group]

    def _after_loss(self, batch: Batch, ended: Ended, by_id: Mapping[str, Mutation],
                    accept: Callable[[MutationResult], None]) -> Batch | None:
        lost = (*batch.lost, ended.why or "the worker ended before finishing")
        if ended.retry and len(lost) < ATTEMPTS:
            return Batch(ended.unfinished, lost)
        lead = "its worker was lost twice: " if ended.retry else ""
        for i in ended.unfinished:
            accept(_no_decision(by_id[i], lead + "; ".join(lost)))
        return None

    def _request(self, engine: Engine, group: Sequence[Mutation]) -> LeaseRequest:
        gates = [engine.gates[g] for g in dict.fromkeys(g for m in group for g in m.expect.gates)]
        backend = self.backend()
        why = backend.why_cannot_run()
        if why is not None:
            raise Unsatisfiable(why)
        request = leasing.request_for(merged_gate(gates), self.target.box, backend.boxes(), self.config.ttl)
        # A worker runs the baseline and then each of its mutations: its lease may last that long.
        per_run = sum(g.driver.timeout + (g.build_timeout if g.build is not None else 0.0) for g in gates)
        return dataclasses.replace(request, max_runtime=per_run * (len(group) + 1) + leasing.RUNTIME_MARGIN,
                                   purpose="mutate worker")

    def backend(self) -> Backend:
        with self._lock:
            if self._backend is None:
                self._backend = open_backend(self.config, self.target.backend)
            return self._backend

    # -- one worker ------------------------------------------------------------------
    def _work(self, engine: Engine, batch: Batch, by_id: Mapping[str, Mutation], request: LeaseRequest,
              accept: Callable[[MutationResult], None]) -> Ended:
        with self._lock:
            self._seq += 1
            name = f"w{self._seq}"
        backend = self.backend()
        try:
            lease = backend.acquire(request, self.wait)
        except Unsatisfiable as exc:
            return Ended((), batch.ids, f"no lease for worker {name}: {exc}", retry=False)
        except NotGranted as exc:
            return Ended((), batch.ids, f"no lease for worker {name} within {self.wait:g} s: {exc}", retry=False)
        except (LeaseError, *_BACKEND_FAULTS) as exc:
            return Ended((), batch.ids, f"no lease for worker {name}: lease backend {backend.name}: {_fault(exc)}",
                         retry=False)
        proc: subprocess.Popen[str] | None = None
        stopped = threading.Event()

        def on_lost(reason: str) -> None:      # the heartbeat was refused: stop the worker now
            stopped.set()
            if proc is not None:
                _kill(proc)

        holding = Holding(backend, lease, on_lost)
        facts: dict[str, Any] = {"backend": lease.backend, "lease_id": lease.id, "box": lease.box,
                                 "slots": list(lease.slots), "token": lease.token, "worker": name,
                                 "attempt": len(batch.lost) + 1}
        try:
            with tempdirs.folder("mutate-fleet-") as tmp:
                refused, err = Path(tmp) / "refused", Path(tmp) / "stderr"
                # -P: the root's own `gates/` folder (its gate files) must not shadow the gates package.
                argv = [*backend.run_prefix(lease), sys.executable, "-P", "-m", "redfirst.mutations.fleet", "--root",
                        str(engine.root), "--name", name, "--", *batch.ids]
                env = {**os.environ, **backend.env(lease), REFUSED_FILE: str(refused)}
                with err.open("w") as errf:
                    proc = subprocess.Popen(argv, cwd=engine.root, env=env, stdout=subprocess.PIPE, stderr=errf,
                                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
                    if holding.lost.is_set():
                        _kill(proc)
                    got, finished, other = self._read(proc, holding, by_id, facts, accept, engine.tree)
                    rc = proc.wait()
                unfinished = tuple(i for i in batch.ids if i not in got)
                if other is not None:       # another worker would find the same tree
                    return Ended(tuple(got.values()), unfinished, f"worker {name}: {other}", retry=False)
                if finished and rc == 0 and not unfinished:
                    return Ended(tuple(got.values()), ())
                why = self._why_ended(lease, holding, name, rc, refused, err, stopped.is_set())
                return Ended(tuple(got.values()), unfinished, why)
        finally:
            if proc is not None and proc.poll() is None:
                _kill(proc)
                proc.wait()
            holding.release()

    def _read(self, proc: subprocess.Popen[str], holding: Holding, by_id: Mapping[str, Mutation],
              facts: dict[str, Any], accept: Callable[[MutationResult], None],
              expected: str) -> tuple[dict[str, MutationResult], bool, str | None]:
        """Accept each streamed result while the lease is live; (results, whether the worker said done,
        why its results cannot count: it runs on another tree than `expected`)."""
        got: dict[str, MutationResult] = {}
        checked = False
        assert proc.stdout is not None
        for line in _lines(proc.stdout):
            if "hello" in line:
                facts.update({k: v for k, v in line["hello"].items() if k not in facts})
                continue
            if "tree" in line or not checked:   # a result before the worker named its tree: unchecked
                other = _other_tree(line.get("tree"), by_id, expected)
                if other is not None:
                    _kill(proc)     # its results would be another tree's, keyed and proved as this one's
                    return got, False, other
                checked = True
                continue
            if "done" in line:
                return got, True, None
            record = line.get("result")
            m = by_id.get(str(record.get("id"))) if isinstance(record, dict) else None
            if m is None or m.id in got:
                continue
            try:
                r = MutationResult.from_record(m, record)
            except (KeyError, ValueError, TypeError):
                continue        # not a result this client can read: the mutation stays unfinished
            if _lease_gone(holding, r):
                _kill(proc)     # decided after the lease ended: not evidence, and nothing after it is
                break
            r = dataclasses.replace(r, cached=False, extra={"lease": dict(facts)})
            got[m.id] = r
            accept(r)
        return got, False, None

    def _why_ended(self, lease: Lease, holding: Holding, name: str, rc: int, refused: Path, err: Path,
                   stopped: bool) -> str:
        where = f"lease {lease.id} of worker {name} on {lease.box}"
        if refused.is_file():
            return f"{where}: the lease's wrapper refused to run the worker: {refused.read_text().strip()}"
        if stopped or holding.lost.is_set():
            return f"{where} was lost: {holding.lost_reason}"
        try:
            holding.backend.renew(lease.id, lease.token)
        except StaleLease as exc:
            return f"{where} was lost: {exc}"
        except LeaseError as exc:
            return f"{where} could not be confirmed: {exc}"
        tail = " | ".join(err.read_text(errors="replace").strip().splitlines()[-3:])[:400]
        return f"the worker {name} under {where} ended with exit {rc} before finishing" + (f": {tail}" if tail else "")


def _documents(mutations: Mapping[str, Mutation]) -> dict[str, str]:
    return {i: hashlib.sha256(m.document.encode("utf-8", errors="surrogateescape")).hexdigest()
            for i, m in mutations.items()}


def _other_tree(tree: Any, by_id: Mapping[str, Mutation], expected: str) -> str | None:
    """Why a worker's results are not this run's (None: the same tree and mutation documents)."""
    if not isinstance(tree, dict):
        return "it sent a result before naming the tree it runs on"
    if tree.get("digest") != expected:
        return (f"it found another tree than this run's (tree digest {str(tree.get('digest'))[:12]} against "
                f"{expected[:12]}: the files were edited since the run began)")
    documents = tree.get("documents")
    theirs: dict[str, Any] = documents if isinstance(documents, dict) else {}
    changed = sorted(i for i, d in _documents(by_id).items() if i in theirs and theirs[i] != d)
    if changed:
        return f"it found other mutation documents than this run's for {', '.join(changed)} (edited since the run began)"
    return None


def _lease_gone(holding: Holding, r: MutationResult) -> bool:
    if holding.lost.is_set() or holding.overdue():
        return True
    if r.cause not in _UNSURE and not any(g.cause in _UNSURE for g in (*r.gates, *r.controls)):
        return False
    try:    # a gate killed by a signal or a timeout: maybe by the lease's end, so ask the backend
        holding.backend.renew(holding.lease.id, holding.lease.token)
    except LeaseError:
        return True
    return False


def _lines(stream: IO[str]) -> Any:
    for text in stream:
        with contextlib.suppress(ValueError):
            doc = json.loads(text)
            if isinstance(doc, dict):
                yield doc


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _no_decision(m: Mutation, why: str) -> MutationResult:
    return MutationResult(m, MutationOutcome.DISCARDED, Cause.ENVIRONMENT, f"no decision: {why}", BuildStatus("none"))


# -- the worker process (`python -m redfirst.mutations.fleet`) -----------------------------------
def worker_main(argv: Sequence[str]) -> int:
    """Run the given mutations here (inside the lease), streaming each result as a JSON line on stdout."""
    from redfirst.mutations.commands.common import gates_of, project_at
    from redfirst.mutations.loader import mutation_paths
    from redfirst.mutations.selection import check_against_gates, select

    ap = argparse.ArgumentParser(prog="python -m redfirst.mutations.fleet")
    ap.add_argument("--root", required=True)
    ap.add_argument("--name", default="worker")
    ap.add_argument("ids", nargs="+")
    args = ap.parse_args(argv)
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)        # whatever else prints goes to stderr: stdout carries the results only
    lock = threading.Lock()

    def emit(doc: Mapping[str, Any]) -> None:
        with lock:
            stream.write(json.dumps(doc) + "\n")
            stream.flush()

    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    emit({"hello": {"host": socket.gethostname(), "pid": os.getpid(),
                    "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                    "slurm_job_id": os.environ.get("SLURM_JOB_ID"), "slurm_step_id": os.environ.get("SLURM_STEP_ID"),
                    "boot_id": _boot_id()}})
    project = project_at(args.root)
    gates = gates_of(project)
    mutations = select(project, args.ids, Path(args.root))
    check_against_gates(mutations, gates)
    engine = Engine(project.root, gates, jobs=1, progress=lambda line: print(f"{args.name}: {line}", file=sys.stderr),
                    use_cache=False, prove=False, unkeyed=mutation_paths(project),
                    on_result=lambda r: emit({"result": r.record()}))
    # Named before any result: the client counts them only for the tree and mutations it keys them by.
    emit({"tree": {"digest": engine.tree_key(), "documents": _documents({m.id: m for m in mutations})}})
    engine.run(mutations)
    emit({"done": len(mutations)})
    return 0


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
