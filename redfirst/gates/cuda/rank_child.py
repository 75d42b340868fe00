"""One rank of a rank group: rendezvous, the factory called with the group, every arm observed.

Started by the launcher (redfirst.gates.cuda.ranks), never by hand. It appends JSON lines to
`--out`: `{"progress": PHASE}` as it goes (so the launcher can say where a hung rank
stopped), `{"arrived": true}` once every rank reached the rendezvous, one
`{"observation": "cuda-graph", ...}` per arm (bound to its rank, world size and tp size),
or `{"error": ...}` / `{"unavailable": ...}` / `{"rendezvous": ...}`. Exit status 0 whenever
it could say what it saw.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.cuda.observation import KIND


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m redfirst.gates.cuda.rank_child")
    p.add_argument("--run", required=True)
    p.add_argument("--variants", required=True)
    p.add_argument("--shapes", required=True)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--replays", type=int, default=4)
    p.add_argument("--repeat-eager", type=int, default=2)
    p.add_argument("--capture", choices=("stream", "torch"), default="stream")
    p.add_argument("--hazard", default=None)
    p.add_argument("--dtype", default=None)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--tp-size", type=int, required=True)
    p.add_argument("--backend", choices=("sim", "nccl"), required=True)
    p.add_argument("--store-port", type=int, required=True)
    p.add_argument("--dist-port", type=int, default=0)
    p.add_argument("--rendezvous-timeout", type=float, default=30.0)
    p.add_argument("--timeout", type=float, default=600.0, help="how long a collective may wait for its peers")
    p.add_argument("--out", required=True)
    return p


class Out:
    """The rank's line file; each line is flushed at once, so a killed rank leaves what it said."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, **record: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True, allow_nan=False) + "\n")

    def progress(self, phase: str) -> None:
        self.write(progress=phase, at=time.time())


def rendezvous(client: Any, out: Out, rank: int, world_size: int, timeout: float) -> list[int]:
    """Announce this rank; the ranks that did not arrive within `timeout` (empty: all did)."""
    from redfirst.gates.cuda.store import StoreTimeout

    client.set(f"arrive/{rank}", b"1")
    out.write(announced=True)
    deadline = time.monotonic() + timeout
    missing = []
    for r in range(world_size):
        try:
            client.get(f"arrive/{r}", max(0.0, deadline - time.monotonic()))
        except StoreTimeout:
            missing.append(r)
    return missing


def end_with_launcher(poll: float = 0.2) -> None:
    """End this rank (and what it started: its session) once its launcher is gone: the runner may
    kill the launcher at the gate's timeout, and a rank in a session of its own would outlive it."""
    import os
    import signal
    import threading

    launcher = os.getppid()

    def watch() -> None:
        while os.getppid() == launcher:
            time.sleep(poll)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="redfirst-launcher-watch").start()


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    end_with_launcher()
    out = Out(Path(args.out))
    out.progress("start")
    from redfirst.gates.cuda.graph_child import load_factory

    try:
        factory = load_factory(args.run)
    except Exception as exc:  # the gate names a factory that cannot be loaded: the gate is wrong (ERROR)
        out.write(error=f"rank {args.rank}: cannot load factory {args.run!r}: {type(exc).__name__}: {exc}")
        return 0
    from redfirst.gates.cuda.rank_hazards import COLLECTIVE_HAZARDS

    if args.hazard is not None and args.hazard not in COLLECTIVE_HAZARDS:
        out.write(error=f"unknown collective hazard {args.hazard!r} (known: {', '.join(COLLECTIVE_HAZARDS)})")
        return 0
    if args.hazard == "collective-order" and args.world_size == 1:
        out.write(unscoped=f"{args.hazard} needs two ranks; the group has one")
        return 0
    from redfirst.gates.cuda.store import Client

    out.progress("rendezvous")
    try:
        client = Client(args.store_port)
        missing = rendezvous(client, out, args.rank, args.world_size, args.rendezvous_timeout)
    except OSError as exc:   # the store is redfirst's: a rendezvous it cannot make is no failure of the step
        out.write(rendezvous=f"rank {args.rank} cannot reach the rank group's store: {type(exc).__name__}: {exc}")
        return 0
    if missing:
        out.write(rendezvous=f"ranks {missing} did not arrive within {args.rendezvous_timeout:g} s")
        return 0
    out.write(arrived=True)
    variants = [str(v) for v in json.loads(args.variants)]
    shapes = [tuple(int(x) for x in s) for s in json.loads(args.shapes)]
    try:
        if args.backend == "sim":
            run_sim(args, factory, client, out, variants, shapes)
        else:
            from redfirst.gates.cuda.rank_nccl import run_nccl

            run_nccl(args, factory, out, variants, shapes)
    except Exception as exc:  # the arms keep the step's failures: what escapes them is the harness's own (ERROR)
        out.write(error=f"rank {args.rank}: harness failure: {type(exc).__name__}: {exc}"[:600])
        return 0
    out.progress("done")
    return 0


def run_sim(args: argparse.Namespace, factory: Any, client: Any, out: Out, variants: list[str],
            shapes: list[tuple[int, ...]]) -> None:
    from redfirst.gates.cuda.arm import Plan
    from redfirst.gates.cuda.rank_hazards import wrapper
    from redfirst.gates.cuda.sim import SimGroup, device
    from redfirst.gates.cuda.sim_arm import run_arm

    group = SimGroup(args.rank, args.world_size, args.tp_size, client, args.timeout, out.progress,
                     dtype=args.dtype or "float32")
    out.write(device=device(args.rank))
    plan = Plan(warmup=args.warmup, replays=args.replays, repeat_eager=args.repeat_eager)
    try:
        for variant in variants:
            for shape in shapes:
                out.progress(f"arm {variant} {list(shape)}")
                wrap = wrapper(args.hazard, group) if args.hazard else None
                obs = run_arm(factory, variant, shape, plan, group, out.progress, wrap)
                fields = obs.fields()
                fields["hazard"] = args.hazard
                out.write(observation=KIND, **fields)
    finally:
        group.leave()   # a peer still waiting on a collective of this rank's is told at once


if __name__ == "__main__":
    sys.exit(main())
