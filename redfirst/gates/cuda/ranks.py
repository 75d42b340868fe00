"""The launcher of a rank group (`ranks:` on a cuda-graph gate): one child per rank, every rank accounted for.

    python -m redfirst.gates.cuda.ranks --world-size 2 --tp-size 2 --backend sim --deadline 50 \
        --run module:function --variants '["dense"]' --shapes '[[4, 8]]' ...

It serves the rendezvous store on loopback, starts `python -m redfirst.gates.cuda.rank_child`
once per rank (each in a session of its own, ending itself if the launcher is killed), and waits. When a rank fails or leaves without
arriving, the others get a short grace and are then ended; at `--deadline` (before the gate's
own timeout) every rank still running is ended and those not waiting on a peer's collective
are named as hung. Then it writes into the gate's evidence, for every rank, the arms that rank
observed and one `{"observation": "cuda-graph-rank", ...}` status: rank, world size, tp size,
backend, device, exit status, whether it arrived, how it ended and its last phase. It decides
nothing: redfirst.gates.drivers.cuda_graph.grade does, from these records alone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst import tempdirs
from redfirst.gates import evidence
from redfirst.gates.cuda.observation import KIND
from redfirst.gates.cuda.rank_child import parser as child_parser

RANK_KIND = "cuda-graph-rank"
GRACE = 1.0          # seconds the others get to finish after one rank fails or leaves
POLL = 0.02


def _parser() -> Any:
    p = child_parser()
    p.prog = "python -m redfirst.gates.cuda.ranks"
    for action in p._actions:
        if action.dest in ("rank", "store_port", "out"):
            action.required = False
    p.add_argument("--deadline", type=float, required=True, help="seconds before every rank still running is ended")
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a kill: the records before it stand
    return found


def _end(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def launch(args: Any, child_args: list[str], work: Path) -> list[dict[str, Any]]:
    """Run the ranks; the records to write (arms first, then one status per rank)."""
    from redfirst.gates.cuda.store import Server

    store = Server()
    dist_port = _free_port()
    procs: dict[int, subprocess.Popen[bytes]] = {}
    outs = {r: work / f"rank-{r}.jsonl" for r in range(args.world_size)}
    for r in range(args.world_size):
        procs[r] = subprocess.Popen(
            [sys.executable, "-m", "redfirst.gates.cuda.rank_child", *child_args, "--rank", str(r),
             "--store-port", str(store.port), "--dist-port", str(dist_port), "--out", str(outs[r])],
            start_new_session=True, env={**os.environ, "REDFIRST_RANK": str(r),
                                         "REDFIRST_WORLD_SIZE": str(args.world_size)})
    deadline = time.monotonic() + args.deadline
    ended: dict[int, str] = {}
    cause: int | None = None
    grace_until: float | None = None
    try:
        while any(p.poll() is None for p in procs.values()):
            now = time.monotonic()
            if cause is None:
                for r, p in procs.items():
                    code = p.poll()
                    lines = _lines(outs[r]) if code is not None else []
                    # a rank that leaves before its end (whatever its status) leaves its peers waiting
                    ran = any(x.get("arrived") for x in lines) and any(x.get("progress") == "done" for x in lines)
                    if code is not None and (code != 0 or not ran):
                        cause, grace_until = r, now + GRACE
                        break
            if grace_until is not None and now >= grace_until:
                for r, p in procs.items():
                    if p.poll() is None:
                        ended[r] = f"stopped after rank {cause} ended"
                        _end(p)
                break
            if now >= deadline:
                for r, p in procs.items():
                    if p.poll() is None:
                        ended[r] = "timeout"
                        _end(p)
                break
            time.sleep(POLL)
    finally:
        for p in procs.values():
            if p.poll() is None:
                _end(p)
        store.close()
    arms: list[dict[str, Any]] = []
    statuses: list[dict[str, Any]] = []
    for r in range(args.world_size):
        lines = _lines(outs[r])
        progress = [x["progress"] for x in lines if "progress" in x]
        status: dict[str, Any] = {
            "observation": RANK_KIND, "rank": r, "world_size": args.world_size, "tp_size": args.tp_size,
            "backend": args.backend, "hazard": args.hazard, "exit": procs[r].returncode if r not in ended else None,
            "arrived": any(x.get("announced") for x in lines), "ended": ended.get(r),
            "phase": progress[-1] if progress else None,
            "device": next((x["device"] for x in lines if "device" in x), None),
        }
        for x in lines:
            for key in ("error", "unavailable", "unscoped", "rendezvous"):
                if key in x:
                    status[key] = x[key]
            if x.get("observation") == KIND:
                arms.append(x)
        statuses.append(status)
    return arms + statuses


def main(argv: Sequence[str] | None = None) -> int:
    args, child_args = _parser().parse_known_args(argv)
    if child_args:
        print(f"ranks: unknown arguments {child_args}", file=sys.stderr)
        return 2
    rec = evidence.recorder()
    if not rec.active:
        print(f"ranks: {evidence.ENV} is not set; nowhere to record observations", file=sys.stderr)
        return 2
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:])]
    skip = {"--deadline"}
    passed: list[str] = []
    it = iter(forwarded)
    for a in it:
        if a.split("=", 1)[0] in skip:
            if "=" not in a:
                next(it, None)
            continue
        passed.append(a)
    with tempdirs.folder("redfirst-ranks-") as tmp:
        records = launch(args, passed, Path(tmp))
    for record in records:
        kind = record.pop("observation")
        rec.observation(kind, **record)
        if kind == RANK_KIND:
            print(f"rank {record['rank']}: exit {record['exit']}, arrived {record['arrived']}, "
                  f"ended {record['ended']}, last phase {record['phase']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
