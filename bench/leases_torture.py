"""The full SIGKILL torture: 50 processes x 200 acquire/release cycles on one 4-slot box, random SIGKILLs.

    python bench/leases_torture.py [--processes 50] [--cycles 200] [--append]

The test suite runs the same code scaled to 50 x 40 (tests/leases/test_torture.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from leases_common import append, machine, ms, pct  # noqa: E402

from redfirst.leases.torture import run_torture  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--ttl", type=float, default=5.0)
    ap.add_argument("--kill-every", type=float, default=0.25)
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 4}\n")
        os.environ["REDFIRST_LEASES_DB"] = str(root / "state" / "leases.db")
        res = run_torture(root, "tort", args.processes, args.cycles, args.ttl, args.kill_every, root / "holders.log")
    ok = not res.overlaps_audit and not res.overlaps_holders and not res.late_regrants
    delays = res.regrant_delays or [0.0]
    lines = [
        f"- machine: {machine()}",
        f"- {args.processes} processes x {args.cycles} cycles on box `tort` (4 slots; 1 GPU, 2 GPUs or the whole "
        f"box at random), TTL {args.ttl:g} s, a SIGKILL about every {args.kill_every:g} s (killed processes are "
        f"replaced to finish their cycles)",
        f"- {res.completed} cycles completed in {res.wall:.1f} s; {res.killed} processes killed, "
        f"{res.killed_holding} of them while holding a lease",
        f"- overlapping live leases: {len(res.overlaps_audit)} in the audit log, {len(res.overlaps_holders)} in the "
        f"holders' own timestamps",
        f"- killed holder's slots granted again after: median {ms(pct(delays, 0.5))}, max {ms(max(delays))} "
        f"(bound TTL + 1 s = {args.ttl + 1:g} s; late: {len(res.late_regrants)})",
        f"- result: {'PASS' if ok else 'FAIL'}",
    ]
    if args.append:
        append("SIGKILL torture, full size (`bench/leases_torture.py`)", lines)
    else:
        print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
