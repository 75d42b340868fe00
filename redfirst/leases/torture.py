"""The SIGKILL torture of the local backend: many processes, acquire/release cycles, random kills.

`run_torture` is shared by the test (scaled) and `bench/leases_torture.py` (the full 50 x 200).
The checks read two independent records: the audit log in the database, and the timestamps
each holder writes itself while it believes it holds the slots.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import load
from redfirst.leases.model import AuditEvent

WORKER = textwrap.dedent("""
    import os, random, sys, time
    from pathlib import Path
    from redfirst.leases.backends.local import LocalBackend
    from redfirst.leases.config import load
    from redfirst.leases.model import LeaseRequest, StaleLease
    root, box, cycles, log, ttl = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    b = LocalBackend(load(root))
    gpus = len([s for s in b.candidates(LeaseRequest(box=box))[0].gpu_slots])
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    rnd = random.Random(os.getpid())
    for i in range(cycles):
        r = rnd.random()
        req = LeaseRequest(box=box, ttl=ttl, whole_box=r < 0.05, gpus=0 if r < 0.05 else (2 if r < 0.15 else 1))
        os.write(fd, f"W {os.getpid()} {time.time():.6f}\\n".encode())     # from here it waits for a grant
        lease = b.acquire(req, 600)
        lid = f"{b.creation_id}/{lease.id}"     # lease ids are per lease file
        hold = 0.3 if rnd.random() < 0.1 else rnd.random() * 0.002     # some long holds
        os.write(fd, f"A {os.getpid()} {lid} {','.join(lease.slots)} {time.time():.6f} {hold:.3f}\\n".encode())
        time.sleep(hold)
        # Written before the release: from here on this holder no longer uses the slots.
        os.write(fd, f"R {os.getpid()} {lid} {','.join(lease.slots)} {time.time():.6f}\\n".encode())
        try:
            b.release(lease.id, lease.token)
        except StaleLease:
            os.write(fd, f"S {os.getpid()} {lid}\\n".encode())
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
    regrant_delays: list[float] = field(default_factory=list)     # a victim's death -> its slots granted or reserved
    whole_box_waits: list[float] = field(default_factory=list)    # a whole-box request's first-come-first-served wait
    late_regrants: list[str] = field(default_factory=list)
    stopped: int = 0
    stopped_pids: set[int] = field(default_factory=set)
    stopped_at: dict[int, list[float]] = field(default_factory=dict)     # pid -> when it got SIGSTOP
    tracebacks: int = 0


def run_torture(root: Path, box: str, processes: int, cycles: int, ttl: float, kill_every: float,
                log: Path, seed: int = 1, dbs: list[Path] | None = None, stop_share: float = 0.0) -> TortureResult:
    """Run the torture; `root` holds a redfirst.yaml declaring `box`; REDFIRST_LEASES_DB picks the file.

    `dbs`: lease files the workers spread over (one machine, so they must still never share a
    slot); `stop_share`: the part of the victims that get SIGSTOP instead (their lease must expire
    by its TTL; they are SIGKILLed later). Each worker's stderr is kept, to count tracebacks."""
    rnd = random.Random(seed)
    script = log.parent / "torture_worker.py"
    script.write_text(WORKER)
    res = TortureResult(processes, cycles)
    errs = log.parent / "worker-stderr"
    errs.mkdir(exist_ok=True)
    spawned = [0]

    spawned_at: dict[int, int] = {}      # pid -> size of the log when it was spawned

    def spawn(n: int) -> subprocess.Popen[bytes]:
        spawned[0] += 1
        env = dict(os.environ)
        if dbs:
            env["REDFIRST_LEASES_DB"] = str(dbs[spawned[0] % len(dbs)])
        with open(errs / f"{spawned[0]}.err", "wb") as err:
            p = subprocess.Popen([sys.executable, str(script), str(root), box, str(n), str(log), str(ttl)],
                                 env=env, stderr=err)
        spawned_at[p.pid] = log.stat().st_size if log.exists() else 0
        return p

    log.touch()
    remaining: dict[int, int] = {}
    live = []
    for _ in range(processes):
        p = spawn(cycles)
        remaining[p.pid] = cycles
        live.append(p)
    kills: list[tuple[int, float]] = []
    finals: list[tuple[int, float]] = []     # the SIGKILL that ends a stopped victim
    stopped: list[tuple[subprocess.Popen[bytes], float]] = []
    start = time.time()
    next_kill = time.monotonic() + kill_every
    while live or stopped:
        live = [p for p in live if p.poll() is None]
        for p, at in list(stopped):     # a stopped holder is killed once its lease surely expired
            if time.time() > at + ttl + 2.0 or not live:
                finals.append((p.pid, time.time()))     # its death voids its claims: the checker must know when
                p.send_signal(signal.SIGKILL)
                p.wait()
                stopped.remove((p, at))
        started = [p for p in live if _started(p.pid, log, spawned_at)]
        if time.monotonic() >= next_kill and started:
            # Only a worker past its start: killing each new one before it runs would stall the torture.
            victim = _pick_victim(started, log, rnd)
            sent = time.time()       # it holds nothing past this instant: SIGKILL ends it before any next step
            # Stopped wherever it is, inside a write transaction too: waiters move it out of the writer lock.
            if rnd.random() < stop_share:
                victim.send_signal(signal.SIGSTOP)
                stopped.append((victim, sent))
                res.stopped += 1
                res.stopped_pids.add(victim.pid)
                res.stopped_at.setdefault(victim.pid, []).append(sent)
            else:
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
    res.tracebacks = sum((f.read_text(errors="replace").count("Traceback") for f in errs.iterdir()), 0)
    if dbs:
        backends = []
        for db in dbs:
            os.environ["REDFIRST_LEASES_DB"] = str(db)
            backends.append(LocalBackend(load(root)))
        _check(res, log, kills + finals, ttl, *backends)
    else:
        _check(res, log, kills + finals, ttl, LocalBackend(load(root)))
    return res


def _waiting(log: Path, signals: list[tuple[int, float, bool]]) -> list[tuple[float, float]]:
    """When workers waited for a grant: from their `W` line to their `A` line, or to the first signal
    their pid got (stopped or killed, a worker wants nothing more)."""
    spans: list[tuple[float, float]] = []
    since: dict[int, float] = {}
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[0] == "W":
            since[int(parts[1])] = float(parts[2])
        elif parts[0] == "A" and int(parts[1]) in since:
            pid, t = int(parts[1]), since.pop(int(parts[1]))
            hit = next((at for p, at, _ in signals if p == pid and at >= t), float("inf"))
            spans.append((t, min(float(parts[4]), hit)))
    for pid, t in since.items():
        spans.append((t, next((at for p, at, _ in signals if p == pid and at >= t), float("inf"))))
    return spans


def _whole_box_waits(log: Path, box_size: int) -> list[float]:
    """Seconds from a worker's `W` to its grant, for the grants of the whole box (`box_size` slots)."""
    asked: dict[int, float] = {}
    waits = []
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[0] == "W":
            asked[int(parts[1])] = float(parts[2])
        elif parts[0] == "A" and int(parts[1]) in asked:
            t0 = asked.pop(int(parts[1]))
            if box_size and len(parts[3].split(",")) == box_size:
                waits.append(float(parts[4]) - t0)
    return waits


def _started(pid: int, log: Path, spawned_at: dict[int, int]) -> bool:
    """Whether the worker `pid` wrote to the log since it was spawned (it is past its interpreter's start)."""
    with open(log, "rb") as f:
        f.seek(spawned_at.get(pid, 0))
        return f" {pid} ".encode() in f.read()


def _holding(log: Path) -> set[int]:
    """The pids that hold a lease right now by their own log (granted, release not begun)."""
    holding: set[int] = set()
    for line in log.read_text().splitlines()[-400:]:
        parts = line.split()
        if parts[0] == "A":
            holding.add(int(parts[1]))
        elif parts[0] in ("A", "R"):
            holding.discard(int(parts[1]))
    return holding


def _pick_victim(live: list[subprocess.Popen[bytes]], log: Path, rnd: random.Random) -> subprocess.Popen[bytes]:
    """Mostly a process that holds a lease right now (the interesting kill), else any."""
    holding = _holding(log)
    holders = [p for p in live if p.pid in holding]
    return rnd.choice(holders) if holders and rnd.random() < 0.8 else rnd.choice(live)


ENDS = ("release", "expire")
VOID = ("dead", "expired", "another boot")     # why a grant may go over another lease file's unended claim


def audit_overlaps(streams: list[list[AuditEvent]]) -> list[str]:
    """The double grants the audit logs of one machine's lease files show by themselves; [] when they prove none.

    Lease ids are qualified by their file (`<creation id>/<id>`, as in the evidence). The events of
    all files are replayed in CLOCK_BOOTTIME order (`at_boot`: one clock for the machine, never
    stepped); each end is dated when it took effect, and at a tie it comes before the grant that
    found it void. A grant of a slot a live lease still holds is a double grant, unless that lease
    is another file's and the grant's evidence names it void (its holder dead at T, or expired at T,
    no later than the grant); that lease's file must then neither renew it nor date its end after T."""
    order: list[tuple[tuple[float, int, int, int], AuditEvent]] = []
    problems: list[str] = []
    for i, stream in enumerate(streams):
        for e in stream:
            if e.at_boot is None:
                problems.append(f"{e.lease_id}: {e.event} #{e.seq} has no boottime stamp, so it cannot be ordered")
                continue
            order.append(((e.at_boot, 0 if e.event in ENDS else 1, i, e.seq), e))
    order.sort(key=lambda x: x[0])
    holder_of: dict[str, str] = {}
    void_at: dict[str, tuple[float, str]] = {}     # lease -> (when a grant over it found it void, that grant)
    for (at, _, _, _), e in order:
        keys = [f"{e.box}/{s}" for s in e.slots]
        if e.event == "grant":
            try:
                over = {f"{v['db']}/{v['lease']}": v for v in json.loads(e.evidence or "{}").get("over", [])}
            except (ValueError, TypeError, KeyError, AttributeError):
                over = {}
                problems.append(f"{e.lease_id}: grant evidence is not readable: {e.evidence!r}")
            for k in keys:
                prev = holder_of.get(k)
                if prev is not None:
                    v = over.get(prev)
                    why = v.get("void") if v else None
                    if prev.split("/")[0] == e.lease_id.split("/")[0]:
                        problems.append(f"{e.lease_id} granted {k} held by {prev} of its own lease file")
                    elif (v is None or why not in VOID or not isinstance(v.get("at_boot"), (int, float))
                          or v["at_boot"] > at):
                        problems.append(f"{e.lease_id} granted {k} held by {prev}: "
                                        + (f"its evidence says {why}" if v else "no evidence its claim was void"))
                    elif prev not in void_at or v["at_boot"] < void_at[prev][0]:
                        void_at[prev] = (float(v["at_boot"]), e.lease_id)
                holder_of[k] = e.lease_id
        elif e.event == "renew" and e.lease_id in void_at and at > void_at[e.lease_id][0]:
            problems.append(f"{e.lease_id} renewed at boottime {at:.6f}, after {void_at[e.lease_id][1]} was granted "
                            f"its slots finding it void at {void_at[e.lease_id][0]:.6f}")
        elif e.event in ENDS:
            if e.lease_id in void_at and at > void_at[e.lease_id][0]:
                problems.append(f"{e.lease_id} ended at boottime {at:.6f} by its own file, after {void_at[e.lease_id][1]}"
                                f" was granted its slots finding it void at {void_at[e.lease_id][0]:.6f}")
            for k in keys:
                if holder_of.get(k) == e.lease_id:
                    del holder_of[k]
    return problems


def _check(res: TortureResult, log: Path, kills: list[tuple[int, float]], ttl: float, *bs: LocalBackend) -> None:
    # Lease ids are per lease file: with several, name each by its file's creation id.
    streams = [[replace(e, lease_id=f"{b.creation_id}/{e.lease_id}") for e in b.audit(limit=10**9)] for b in bs]
    # 1. The audit logs alone: no slot is granted while a live lease holds it (`audit_overlaps`).
    res.overlaps_audit.extend(audit_overlaps(streams))
    events = sorted((e for stream in streams for e in stream), key=lambda e: (e.at_boot or 0.0, e.seq))
    ended_at = {e.lease_id: e.at for e in events if e.event in ENDS}
    signals = sorted(((pid, t, pid in res.stopped_at and t in res.stopped_at[pid]) for pid, t in kills),
                     key=lambda x: x[1])
    # 2. The holders' own timestamps: per slot, the intervals they believed they held never overlap.
    acquired: dict[tuple[int, str], tuple[list[str], float]] = {}
    intervals: dict[str, list[tuple[float, float, str]]] = {}
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
    # Handed on: granted, or reserved to the head of the line that waits for more slots (the slot is its from then).
    grants = [e for e in events if e.event in ("grant", "reserve")]
    boxes = {e.box for e in events if e.event == "grant"}
    res.whole_box_waits.extend(_whole_box_waits(log, max((len(b.slots) for b in bs[0].boxes() if b.name in boxes),
                                                         default=0)))
    waiting = _waiting(log, signals)
    for (pid, lease_id), (slots, t0) in acquired.items():
        # Killed while holding: it held until it died; the slots must be granted again within TTL + 1 s.
        dead = next((t for p, t, _ in signals if p == pid and t >= t0), None)     # its pid may be reused later
        if dead is None:
            continue
        res.killed_holding += 1
        for s in slots:
            intervals.setdefault(s, []).append((t0, dead, lease_id))
        later = [g.at for g in grants if g.at > dead and set(g.slots) & set(slots)]
        if later:
            # Counted from when a live worker wanted a grant: with nobody waiting, nothing is owed.
            regrant = min(later)
            asked = min((max(w0, dead) for w0, w1 in waiting if w1 > dead and w0 <= regrant), default=dead)
            delay = regrant - asked
            res.regrant_delays.append(delay)
            if delay > ttl + 1.0:
                res.late_regrants.append(f"{lease_id} ({','.join(slots)}) handed on {delay:.2f}s after its kill"
                                         + (f" ({asked - dead:.2f}s after it, a worker began to wait)"
                                            if asked > dead else ""))
    for slot, spans in intervals.items():
        spans.sort()
        for (_a0, a1, la), (b0, _b1, lb) in zip(spans, spans[1:], strict=False):
            if b0 < a1:
                res.overlaps_holders.append(f"{slot}: {la} held until {a1:.6f}, {lb} from {b0:.6f}")
