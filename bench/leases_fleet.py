"""A simulated fleet: 10 boxes with mixed labels, 1000 gates placed by `redfirst.gates.leasing` with `--lease auto`.

    python bench/leases_fleet.py [--gates 1000] [--threads 20] [--append]

The boxes are declared in a redfirst.yaml and leased through the real local backend (SQLite,
locks, FCFS queues); a gate "runs" by sleeping its duration while it holds its lease. The
makespan is compared with the lower bound: total work over boxes, and the tighter bound of
each label class's work over the boxes that can run it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from leases_common import append, machine  # noqa: E402

from redfirst.gates.leasing import lease_for, placement_order  # noqa: E402
from redfirst.gates.model import DriverSpec, Gate, Requires, Source  # noqa: E402

MODELS = ["h200"] * 4 + ["l4"] * 3 + ["a100"] * 2 + ["gb10"]     # 10 boxes, one GPU each


def fleet_yaml() -> str:
    lines = ["leases:", "  boxes:"]
    for i, model in enumerate(MODELS):
        sm = {"h200": "9.0", "l4": "8.9", "a100": "8.0", "gb10": "12.1"}[model]
        lines.append(f"    box{i}: {{gpus: 1, labels: {{gpu_model: {model}, sm: \"{sm}\"}}}}")
    return "\n".join(lines) + "\n"


def make_gates(n: int, rnd: random.Random) -> tuple[list[Gate], dict[str, float]]:
    gates, duration = [], {}
    for i in range(n):
        r = rnd.random()
        select = None
        if r < 0.15:
            select = "gpu_model=h200"
        elif r < 0.25:
            select = "gpu_model=l4"
        elif r < 0.30:
            select = "sm>=12.0"           # only the gb10 box
        elif r < 0.40:
            select = "sm>=8.9"            # h200, l4, gb10
        whole = rnd.random() < 0.1
        g = Gate(f"g{i:04d}", DriverSpec("command", ("true",), timeout=60), Source(Path("g.yaml"), 1),
                 kind="timing" if whole else None, requires=Requires("cuda", 1, select, whole))
        gates.append(g)
        duration[g.id] = rnd.uniform(0.02, 0.12)
    return gates, duration


def lower_bounds(gates: list[Gate], duration: dict[str, float]) -> tuple[float, float]:
    from redfirst.leases.selector import parse
    labels = [{"gpu_model": m, "sm": {"h200": "9.0", "l4": "8.9", "a100": "8.0", "gb10": "12.1"}[m]} for m in MODELS]
    total = sum(duration.values())
    simple = total / len(MODELS)
    tight = simple
    for sel in {g.requires.select for g in gates if g.requires.select}:
        s = parse(sel)
        fits = sum(1 for lab in labels if s.matches(lab))
        # work that can only run on this class's boxes (gates whose selector is this one or narrower)
        work = sum(duration[g.id] for g in gates if g.requires.select == sel)
        tight = max(tight, work / fits)
    return simple, tight


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gates", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=20)
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    rnd = random.Random(7)
    gates, duration = make_gates(args.gates, rnd)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "redfirst.yaml").write_text(fleet_yaml())
        os.environ["REDFIRST_LEASES_DB"] = str(root / "leases.db")
        ordered = placement_order(gates, "auto", root=root)
        busy: dict[str, float] = {}
        lock = threading.Lock()

        def run(g: Gate) -> None:
            with lease_for(g, "auto", 600, root=root) as leased:
                time.sleep(duration[g.id])
                with lock:
                    busy[leased.box] = busy.get(leased.box, 0.0) + duration[g.id]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(run, ordered))
        makespan = time.perf_counter() - t0
    simple, tight = lower_bounds(gates, duration)
    util = sum(busy.values()) / (makespan * len(MODELS))
    lines = [f"- machine: {machine()}",
             "- 10 boxes, one GPU each: 4 x h200 (sm 9.0), 3 x l4 (8.9), 2 x a100 (8.0), 1 x gb10 (12.1); local "
             "backend, real SQLite lease file",
             f"- {args.gates} gates, each holds its lease for 20-120 ms: 60% any GPU, 15% gpu_model=h200, 10% "
             f"gpu_model=l4, 5% sm>=12.0 (one box), 10% sm>=8.9; 10% timing gates (whole box); "
             f"{args.threads} runner threads, scarcest first (`placement_order`)",
             f"- total work {sum(duration.values()):.2f} s; lower bound total/boxes {simple:.2f} s, "
             f"per-label-class bound {tight:.2f} s",
             f"- makespan of `--lease auto`: {makespan:.2f} s = {makespan / simple:.2f}x total/boxes, "
             f"{makespan / tight:.2f}x the per-class bound; box utilisation {util:.0%}"]
    if args.append:
        append("Simulated fleet, `--lease auto` placement (`bench/leases_fleet.py`)", lines)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
