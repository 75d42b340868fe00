"""The SIGKILL torture of the local backend: many processes, acquire/release cycles, random kills.

`run_torture` is shared by the test (scaled) and `bench/leases_torture.py` (the full 50 x 200).
The checks read two independent records: the audit log in the database, and the timestamps
each holder writes itself while it believes it holds the slots.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from leases.backends.local import LocalBackend
from leases.config import load

WORKER = textwrap.dedent("""
    import os, random, sys, time
    from pathlib import Path
    from leases.backends.local import LocalBackend
    from leases.config import load
    from leases.model import LeaseRequest, StaleLease
    root, box, cycles, log, ttl = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    b = LocalBackend(load(root))
    gpus = len([s for s in b.candidates(LeaseRequest(box=box))[0].gpu_slots])
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rnd = random.Random(os.getpid())
    for i in range(cycles):
        r = rnd.random()
        req = LeaseRequest(box=box, ttl=ttl, whole_box=r < 0.05, gpus=0 if r < 0.05 else (2 if r < 0.15 else 1))
        lease = b.acquire(req, 600)
        os.write(fd, f"A {os.getpid()} {lease.id} {','.join(lease.slots)} {time.time():.6f}\\n".encode())
        time.sleep(rnd.random() * 0.002)
        # Written before the release: from here on this holder no longer uses the slots.
        os.write(fd, f"R {os.getpid()} {lease.id} {','.join(lease.slots)} {time.time():.6f}\\n".encode())
        try:
            b.release(lease.id, lease.token)
        except StaleLease:
            os.write(fd, f"S {os.getpid()} {lease.id}\\n".encode())
    os.write(fd, f"D {os.getpid()}\\n".encode())
""")


@dataclass
class TortureResult:
    processes: int
    cycles_each: int
    completed: int = 0
    killed: int = 0
    killed_holding: int = 0
    wall: float = 0.0
    overlaps_audit: list[str] = field(default_factory=list)
    overlaps_holders: list[str] = field(default_factory=list)
    regrant_delays: list[float] = field(default_factory=list)
    late_regrants: list[str] = field(default_factory=list)


def run_torture(root: Path, box: str, processes: int, cycles: int, ttl: float, kill_every: float,
                log: Path, seed: int = 1) -> TortureResult:
    """Run the torture; `root` holds a redfirst.yaml declaring `box`; REDFIRST_LEASES_DB picks the file."""
    rnd = random.Random(seed)
    script = log.parent / "torture_worker.py"
    script.write_text(WORKER)
    res = TortureResult(processes, cycles)

    def spawn(n: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, str(script), str(root), box, str(n), str(log), str(ttl)])

    log.touch()
    remaining: dict[int, int] = {}
    live = []
    for _ in range(processes):
        p = spawn(cycles)
        remaining[p.pid] = cycles
        live.append(p)
    kills: list[tuple[int, float]] = []
    start = time.time()
    next_kill = time.monotonic() + kill_every
    while live:
        live = [p for p in live if p.poll() is None]
        if time.monotonic() >= next_kill and live:
            victim = _pick_victim(live, log, rnd)
            sent = time.time()       # it holds nothing past this instant: SIGKILL ends it before any next step
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            kills.append((victim.pid, sent))
            live.remove(victim)
            done = sum(1 for line in log.read_text().splitlines() if line.startswith(f"R {victim.pid} "))
            left = remaining.pop(victim.pid) - done
            if left > 0:
                p = spawn(left)
                remaining[p.pid] = left
                live.append(p)
            next_kill = time.monotonic() + kill_every * (0.5 + rnd.random())
        time.sleep(0.01)
    res.wall = time.time() - start
    res.killed = len(kills)
    _check(res, log, kills, ttl, LocalBackend(load(root)))
    return res


def _pick_victim(live: list[subprocess.Popen[bytes]], log: Path, rnd: random.Random) -> subprocess.Popen[bytes]:
    """Mostly a process that holds a lease right now (the interesting kill), else any."""
    holding: set[int] = set()
    for line in log.read_text().splitlines()[-400:]:
        parts = line.split()
        if parts[0] == "A":
            holding.add(int(parts[1]))
        elif parts[0] == "R":
            holding.discard(int(parts[1]))
    holders = [p for p in live if p.pid in holding]
    return rnd.choice(holders) if holders and rnd.random() < 0.8 else rnd.choice(live)


def _check(res: TortureResult, log: Path, kills: list[tuple[int, float]], ttl: float, b: LocalBackend) -> None:
    events = b.audit(limit=10**9)
    # 1. The audit log: replay it; no slot is granted while a live lease holds it.
    holder_of: dict[str, str] = {}
    ended_at: dict[str, float] = {}
    for e in events:
        keys = [f"{e.box}/{s}" for s in e.slots]
        if e.event == "grant":
            for k in keys:
                if k in holder_of:
                    res.overlaps_audit.append(f"{e.lease_id} granted {k} held by {holder_of[k]}")
                holder_of[k] = e.lease_id
        elif e.event in ("release", "expire"):
            ended_at[e.lease_id] = e.at
            for k in keys:
                if holder_of.get(k) == e.lease_id:
                    del holder_of[k]
    # 2. The holders' own timestamps: per slot, the intervals they believed they held never overlap.
    acquired: dict[tuple[int, str], tuple[list[str], float]] = {}
    intervals: dict[str, list[tuple[float, float, str]]] = {}
    kill_at = dict(kills)
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[0] == "A":
            acquired[(int(parts[1]), parts[2])] = (parts[3].split(","), float(parts[4]))
        elif parts[0] == "R":
            slots, t0 = acquired.pop((int(parts[1]), parts[2]))
            res.completed += 1
            for s in slots:
                intervals.setdefault(s, []).append((t0, float(parts[4]), parts[2]))
        elif parts[0] == "S":
            # Its lease went stale while it slept: it held the slots only until the expiry the audit records.
            for s, spans in intervals.items():
                intervals[s] = [(a, min(b, ended_at.get(lid, b)) if lid == parts[2] else b, lid)
                                for a, b, lid in spans]
    grants = [e for e in events if e.event == "grant"]
    for (pid, lease_id), (slots, t0) in acquired.items():
        # Killed while holding: it held until it died; the slots must be granted again within TTL + 1 s.
        dead = kill_at.get(pid)
        if dead is None:
            continue
        res.killed_holding += 1
        for s in slots:
            intervals.setdefault(s, []).append((t0, dead, lease_id))
        later = [g.at for g in grants if g.at > dead and set(g.slots) & set(slots)]
        if later:
            delay = min(later) - dead
            res.regrant_delays.append(delay)
            if delay > ttl + 1.0:
                res.late_regrants.append(f"{lease_id} ({','.join(slots)}) regranted {delay:.2f}s after its kill")
    for slot, spans in intervals.items():
        spans.sort()
        for (_a0, a1, la), (b0, _b1, lb) in zip(spans, spans[1:], strict=False):
            if b0 < a1:
                res.overlaps_holders.append(f"{slot}: {la} held until {a1:.6f}, {lb} from {b0:.6f}")
