"""The full SIGKILL torture: 50 processes x 200 acquire/release cycles on one 4-slot box, random SIGKILLs.

    python bench/leases_torture.py [--processes 50] [--cycles 200] [--daemon-rounds 40] [--append]

Then the daemon phase (issue 34.5): 4 workers each run `leases run --whole-box` rounds on the same box; each
leased command first looks for a live daemon of any earlier lease (one beside it is a double grant), then
starts a daemon (double fork, setsid, every descriptor closed, empty environment) and returns.

The test suite runs the same code scaled to 50 x 40 (tests/leases/test_torture.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from leases_common import append, machine, ms, pct  # noqa: E402

from redfirst.leases.torture import run_torture  # noqa: E402

DAEMON = """\
import os, sys
pidfile = sys.argv[1]
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.closerange(0, 1 << 16)
os.execve(sys.executable, [sys.executable, "-c",
          "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)", pidfile], {})
"""

# The leased command: any daemon an earlier lease started still alive is a second holder of the box.
LEASED = """\
for f in "$1"/*.pid; do [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && echo "BESIDE $(cat "$f")"; done
"$2" "$3" "$1/$4.pid"
while [ ! -s "$1/$4.pid" ]; do sleep 0.02; done
"""


def daemon_phase(root: Path, workers: int, rounds: int) -> tuple[int, int, int, int]:
    """(leases run, daemons beside a later lease, tracebacks, daemons alive at the end)."""
    exe = shutil.which("leases") or str(Path(sys.executable).with_name("leases"))
    pids = root / "pids"
    pids.mkdir()
    (root / "daemon.py").write_text(DAEMON)
    (root / "leased.sh").write_text(LEASED)
    outs: list[subprocess.CompletedProcess[str]] = []
    lock = threading.Lock()

    def worker(w: int) -> None:
        for r in range(rounds):
            out = subprocess.run([exe, "--root", str(root), "run", "--box", "tort", "--whole-box", "--wait", "600",
                                  "--", "sh", str(root / "leased.sh"), str(pids), sys.executable,
                                  str(root / "daemon.py"), f"{w}-{r}"], capture_output=True, text=True, timeout=900)
            with lock:
                outs.append(out)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    beside = sum(o.stdout.count("BESIDE") for o in outs)
    tracebacks = sum(("Traceback" in o.stderr) + (o.returncode != 0) for o in outs)
    alive = 0
    for f in pids.glob("*.pid"):
        try:
            os.kill(int(f.read_text()), 0)
            alive += 1
            os.kill(int(f.read_text()), 9)
        except (OSError, ValueError):
            pass
    return len(outs), beside, tracebacks, alive


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=50)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--ttl", type=float, default=5.0)
    ap.add_argument("--kill-every", type=float, default=0.25)
    ap.add_argument("--daemon-workers", type=int, default=4)
    ap.add_argument("--daemon-rounds", type=int, default=40)
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 4}\n")
        os.environ["REDFIRST_LEASES_DB"] = str(root / "state" / "leases.db")
        res = run_torture(root, "tort", args.processes, args.cycles, args.ttl, args.kill_every, root / "holders.log")
        runs, beside, failed, alive = daemon_phase(root, args.daemon_workers, args.daemon_rounds)
    ok = not res.overlaps_audit and not res.overlaps_holders and not res.late_regrants and not (beside or failed
                                                                                                  or alive)
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
        f"- daemon-spawning holders: {runs} `leases run --whole-box` by {args.daemon_workers} workers, each leaving a "
        f"daemon (double fork, setsid, fds closed, empty env): {beside} daemon(s) alive beside a later lease "
        f"(double grants), {failed} run(s) failed or with a traceback, {alive} daemon(s) alive at the end",
        f"- result: {'PASS' if ok else 'FAIL'}",
    ]
    if args.append:
        append("SIGKILL torture, full size (`bench/leases_torture.py`)", lines)
    else:
        print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
