"""The one place gates meet leases: the lease a gate runs under, and what its record keeps of it.

`lease_for(gate, target, wait)` is a context manager the runner enters per gate (from any
thread): it yields a `LeasedRun` (environment, argv prefix, identity for the evidence record)
and releases on exit, or raises `Unsatisfiable` (no box can ever meet the gate's `requires`:
the message names the missing label) or `NotGranted` (every fitting box stayed busy for
`wait` seconds: the message names the busy box). The runner turns both into NO_DECISION.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redfirst.gates.loader import LoadError
from redfirst.gates.model import Gate
from redfirst.leases.backends import (
    LEASE_BACKEND_ENV,
    THIS_MACHINE_BACKEND,
    THIS_MACHINE_BOX,
    Backend,
    open_backend,
)
from redfirst.leases.config import ConfigError, LeasesConfig, load
from redfirst.leases.detect import is_detected_label
from redfirst.leases.exec import REFUSED_FILE
from redfirst.leases.hold import Holding
from redfirst.leases.model import Box, Lease, LeaseError, LeaseRequest, NotGranted, StaleLease, Unsatisfiable
from redfirst.leases.selector import SelectorError, parse
from redfirst.leases.waiting import acquire_telling

__all__ = ["LeasedRun", "NotGranted", "Unsatisfiable", "lease_for", "needs_lease", "placement_order", "request_for",
           "unmet_where_it_runs"]

AUTO = "auto"
RUNTIME_MARGIN = 120.0     # a lease outlives the gate's own timeouts by this much

_backends: dict[tuple[str, str], Backend] = {}
_backends_lock = threading.Lock()


@dataclass(frozen=True)
class LeasedRun:
    """A gate's lease while it runs: prefix its argv with `run_prefix`, add `env`, record `identity`."""

    env: dict[str, str]
    identity: dict[str, Any]
    lease_id: str
    token: str
    box: str
    run_prefix: list[str]
    holding: Holding = field(compare=False, repr=False)

    def lost(self) -> str | None:
        """Why the lease is no longer live (expired, superseded), or None while it still is.

        A record made under a lease that was lost is NO_DECISION (DESIGN section 4)."""
        if self.holding.lost.is_set():
            return self.holding.lost_reason
        overdue = self.holding.overdue()
        if overdue:
            return overdue
        try:
            self.holding.backend.renew(self.lease_id, self.token)
        except StaleLease as exc:
            return str(exc)
        except LeaseError as exc:   # a fault (disk full, corrupt file): that the lease held is not shown
            return f"the lease could not be confirmed: {exc}"
        return None


def needs_lease(gate: Gate, target: str | None) -> bool:
    """Gates run under a lease with `--lease`, and CUDA gates always (on the local box without it)."""
    return target is not None or gate.requires.device == "cuda"


def _gpus(gate: Gate) -> int:
    r = gate.requires
    return max(r.gpus, 1) if r.device == "cuda" else r.gpus


def _whole_box(gate: Gate) -> bool:
    return gate.requires.whole_box or (gate.kind or "").lower() == "timing"


_configs: dict[tuple[object, ...], LeasesConfig] = {}


def _config(root: Path | None) -> LeasesConfig:
    # Read once per version of redfirst.yaml: a runner asks for every gate.
    root = root if root is not None else _find_root()
    from redfirst import projectconfig

    paths = [root / name for name in (projectconfig.YAML, projectconfig.PYPROJECT)] if root is not None else []
    key = (str(root), *(p.stat().st_mtime if p.is_file() else 0.0 for p in paths))
    with _backends_lock:
        if key not in _configs:
            try:
                _configs[key] = load(root)
            except ConfigError as exc:   # a wrong `leases:` section is a config error (exit 2), never a traceback
                raise LoadError([str(exc)]) from None
        return _configs[key]


def _find_root() -> Path | None:
    here = Path.cwd()
    from redfirst import projectconfig

    for d in (here, *here.parents):
        if projectconfig.configures(d):
            return d
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False)
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else None


def _backend(config: LeasesConfig, name: str) -> Backend:
    # One backend per (config, kind) for the whole process: they are safe to share between threads.
    key = (str(id(config)), f"{config.db_path()}|{name}")    # configs are cached, so their ids are stable
    with _backends_lock:
        if key not in _backends:
            _backends[key] = open_backend(config, name)
        return _backends[key]


def unmet_where_it_runs(gate: Gate, identity: dict[str, Any]) -> str | None:
    """Why what was detected where the gate's command runs does not meet `gate.requires`, or None.

    A box's declaration (redfirst.yaml) places a lease; it never proves what the machine that runs the command
    has. A caller may rely on this: None only when `identity["gpus"]` (the GPUs the backend found where the
    command runs: this machine for the local backend, its declared boxes included) number at least the GPUs
    the gate needs, and, where the backend reports `identity["detected"]` (labels detected there), every term
    of `requires.select` on a label detection answers (`detect.DETECTED_LABELS`, `checkpoint:*`) holds on
    them; a term on a label nothing detects (`rack=r7`) is met by the declaration that placed the lease."""
    box = identity.get("box", "?")
    need = _gpus(gate)
    gpus = identity.get("gpus")
    found = len(gpus) if isinstance(gpus, list) else 0
    declared = (f"; box {box}'s GPUs and labels are only declared in redfirst.yaml, and a declaration proves nothing "
                "about the machine that runs the command") \
        if identity.get("declared_only") else ""
    if need and found < need:
        return f"box {box}: the gate needs {need} GPU(s), detection where its command runs finds {found}{declared}"
    detected = identity.get("detected")
    if gate.requires.select and isinstance(detected, dict):
        for term in parse(gate.requires.select).terms:
            if is_detected_label(term.key) and not term.matches(detected):
                return (f"box {box}: the gate requires {term}, detection where its command runs finds "
                        f"{term.key}={detected.get(term.key, 'nothing')}{declared}")
    return None


def request_for(gate: Gate, target: str | None, boxes: Sequence[Box], ttl: float) -> LeaseRequest:
    """The lease request that satisfies `gate.requires` on `target` (a box, `auto`, or None: local)."""
    r = gate.requires
    gpus, whole = _gpus(gate), _whole_box(gate)
    runtime = gate.driver.timeout + (gate.build_timeout if gate.build is not None else 0.0) + RUNTIME_MARGIN
    purpose = f"gate {gate.id}"
    if target is None or target != AUTO:
        name = target or THIS_MACHINE_BOX
        box = next((b for b in boxes if b.name == name), None)
        if box is None:
            raise Unsatisfiable(f"no box named {name!r} (boxes: {', '.join(b.name for b in boxes) or 'none'})")
        if r.select:
            unmet = parse(r.select).first_unmet(box.label_map)
            if unmet is not None:
                raise Unsatisfiable(f"box {name} lacks label {unmet} (gate requires {r.select})")
        if len(box.gpu_slots) < gpus:
            why = f"; {box.note}" if box.note else ""
            raise Unsatisfiable(f"box {name} lacks label gpus>={gpus} (it has {len(box.gpu_slots)}{why})")
        return LeaseRequest(box=name, gpus=gpus, whole_box=whole, ttl=ttl, max_runtime=runtime, purpose=purpose)
    select = ",".join(x for x in (r.select, f"gpus>={gpus}" if gpus else None) if x) or "gpus>=0"
    sel = parse(select)
    if not any(sel.matches(b.label_map) for b in boxes):
        misses = [sel.first_unmet(b.label_map) for b in boxes]
        names = sorted({str(t) for t in misses if t is not None})
        raise Unsatisfiable(f"no box has label {' / '.join(names) or select} "
                            f"(gate requires {select}; boxes: {', '.join(b.name for b in boxes) or 'none'})")
    return LeaseRequest(select=select, gpus=gpus, whole_box=whole, ttl=ttl, max_runtime=runtime, purpose=purpose)


def placement_order(gates_: Sequence[Gate], target: str | None, root: Path | None = None) -> list[Gate]:
    """Gates in the order a runner should start them: scarcest requirements first, in rounds.

    Gates are grouped by requirement (the request each makes); the groups are ranked by how
    few boxes fit them (then whole box, then more GPUs). Each round takes from every group,
    scarcest first, at most as many gates as boxes fit that group, so the hard gates start
    first but never fill a runner's threads with waiters for the same few boxes while the
    rest of the fleet idles. Gates no box can satisfy come first (they end at once)."""
    config = _config(root)
    kind = THIS_MACHINE_BACKEND if target is None else config.backend
    try:
        boxes = _backend(config, kind).boxes()
    except LeaseError:
        return list(gates_)     # the backend cannot answer: each gate's lease_for reports why
    groups: dict[tuple[str | None, str | None, int, bool], list[Gate]] = {}
    fits: dict[tuple[str | None, str | None, int, bool], int] = {}
    for gate in gates_:
        try:
            req = request_for(gate, target, boxes, config.ttl)
        except (Unsatisfiable, SelectorError):
            groups.setdefault((None, None, -1, False), []).append(gate)
            fits[(None, None, -1, False)] = 0
            continue
        key = (req.box, req.select, req.gpus, req.whole_box)
        if key not in fits:
            sel = parse(req.select) if req.select else None
            fits[key] = 1 if req.box else sum(1 for b in boxes if sel is not None and sel.matches(b.label_map))
        groups.setdefault(key, []).append(gate)
    ranked = sorted(groups, key=lambda k: (fits[k], not k[3], -k[2]))
    ordered: list[Gate] = []
    while any(groups[k] for k in ranked):
        for k in ranked:
            take = len(groups[k]) if fits[k] == 0 else fits[k]
            ordered.extend(groups[k][:take])
            del groups[k][:take]
    return ordered


def _utc(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextlib.contextmanager
def lease_for(gate: Gate, target: str | None, wait: float, *, root: Path | None = None) -> Iterator[LeasedRun]:
    """Hold a lease that satisfies `gate.requires` while the body runs the gate.

    `target`: a box name, `auto` (any fitting box of the configured backend), or None (the
    local box, for CUDA gates). Safe to call from several threads at once."""
    config = _config(root)
    kind = THIS_MACHINE_BACKEND if target is None else config.backend
    try:
        backend = _backend(config, kind)
        why = backend.why_cannot_run()
        if why is not None:
            # A gate's driver runs its command from this machine: where it cannot reach the leased box, it
            # would run here and record this machine as the box, so no box can honestly run it.
            raise Unsatisfiable(why)
        boxes = backend.boxes()
        request = request_for(gate, target, boxes, config.ttl)
        lease = acquire_telling(backend, request, wait, who=f"gate {gate.id}")
    except SelectorError as exc:    # the loader should have refused it; never a traceback here
        raise Unsatisfiable(f"{gate.source}: requires.select: {exc}") from None
    except (Unsatisfiable, NotGranted):
        raise
    except LeaseError as exc:       # the backend cannot be reached (no Slurm client, no controller): no box to run on
        raise Unsatisfiable(f"lease backend {kind}: {exc}") from None
    holding = Holding(backend, lease)
    try:
        box = next((b for b in boxes if b.name == lease.box), None)
        identity: dict[str, Any] = {
            "backend": lease.backend,
            "lease_id": lease.id,
            "token": lease.token,
            "box": lease.box,
            "slots": list(lease.slots),
            "whole_box": lease.whole_box,
            "granted_utc": _utc(lease.granted_at),
            "labels": box.label_map if box else {},
        }
        identity.update(backend.identity(lease, box))
        env = dict(backend.env(lease))
        prefix = backend.run_prefix(lease)
    except LeaseError as exc:       # the box cannot say what it is, or run the command: nothing ran yet
        _release(holding, lease)
        raise Unsatisfiable(f"lease backend {kind}: {exc}") from None
    try:
        yield LeasedRun(env, identity, lease.id, lease.token, lease.box, prefix, holding)
    finally:
        _release(holding, lease)


def enclosing(gate: Gate, *, root: Path | None = None) -> tuple[dict[str, Any], Callable[[], str | None]] | None:
    """The live lease of the leased command this process runs in (a `mutate` fleet worker), or None outside one.

    (identity for the record, a `lost` check like LeasedRun's). The variables alone prove nothing: a
    stray or copied REDFIRST_LEASE_ID would run a CUDA gate on no lease at all, or on another process
    tree's, so the backend is asked whether this process runs inside the lease (its holder or a process
    it runs is this process or an ancestor), then for the lease by its id and token; Unsatisfiable when
    it is not inside it, the lease is not live, or it holds fewer GPUs than the gate needs."""
    lease_id = os.environ.get("REDFIRST_LEASE_ID")
    if not lease_id:
        return None
    token = os.environ.get("REDFIRST_LEASE_TOKEN")
    if not token:
        raise Unsatisfiable(f"REDFIRST_LEASE_ID={lease_id} is set without REDFIRST_LEASE_TOKEN: "
                            f"no lease of an enclosing command can be shown")
    config = _config(root)
    # The backend that granted it (a `mutate --slurm` worker's lease is Slurm's whatever `leases.backend` says);
    # a forged name gains nothing: that backend still refuses a token that is not its live lease's.
    kind = os.environ.get(LEASE_BACKEND_ENV) or config.backend
    try:
        backend = _backend(config, kind)
        # A live lease whose variables were copied into another shell holds its slots for another process tree:
        # asked first, so a stray copy renews nothing.
        outside = backend.why_not_inside(lease_id)
        if outside is not None:
            raise Unsatisfiable(f"REDFIRST_LEASE_ID={lease_id} names a lease this process does not run in "
                                f"({kind}): {outside}")
        lease = backend.renew(lease_id, token)
    except LeaseError as exc:      # StaleLease too: expired, released, or never this lease's token
        raise Unsatisfiable(f"REDFIRST_LEASE_ID={lease_id} names no live lease ({kind}): {exc}") from None
    gpus = sum(1 for s in lease.slots if s.startswith("gpu"))
    if lease.slots and gpus < _gpus(gate):     # a Slurm renew names no slots: Slurm confined the step to its GPUs
        raise Unsatisfiable(f"the enclosing lease {lease_id} holds {gpus} GPU(s), the gate needs {_gpus(gate)}")

    def lost() -> str | None:
        try:
            backend.renew(lease_id, token)
        except LeaseError as exc:
            return f"the enclosing lease {lease_id} was lost: {exc}"
        return None

    identity = {"lease_id": lease_id, "token": token, "lease": "held by the enclosing leased command",
                **({"slots": list(lease.slots)} if lease.slots else {})}
    return identity, lost


def refusal_env(path: Path) -> dict[str, str]:
    """Environment that has a leased run's fenced wrapper write its refusal to `path`, so a refusal's
    exit status is never read as the command's own (the runner then records it, beside the record)."""
    return {REFUSED_FILE: str(path)}


def _release(holding: Holding, lease: Lease) -> None:
    try:
        holding.release()
    except LeaseError as exc:      # the gate's verdict stands; the lease ends by its TTL (see `leases audit`)
        print(f"gates: release of lease {lease.id} failed, it expires by its TTL: {exc}", file=sys.stderr)
