"""`mutate --slurm -n N` against a local `mutate -n 1`, side by side on the same mutations.

    python bench/mutations_fleet.py [--mutations 8] [--sleep 1.0] [--rounds 2] [--no-results]

Builds a small git project in a temporary folder: M functions, one pytest gate per function
(each needing one GPU: `requires: {gpus: 1}`) whose test really sleeps `--sleep` seconds, and
one mutation per function (every third a survivor). Starts a private single-node Slurm with two
GPU GRES slots (redfirst.leases.minislurm, needs root), then per round runs, interleaved and with
`--no-cache`: local `mutate -n 1`, `mutate --slurm -n 1`, `mutate --slurm -n 2`. Prints the wall
times, the speed-up of 2 Slurm workers over 1, and the per-mutation overhead of leasing
((slurm -n 1 - local -n 1) / M); checks the three give the same outcomes; appends a section to
bench/RESULTS.md with the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def project(root: Path, count: int, sleep: float) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "gates").mkdir()
    (root / "mutations").mkdir()
    (root / "pkg" / "__init__.py").write_text("".join(f"def f{i}(x):\n    return x + {i + 1}\n\n\n"
                                                      for i in range(count)))
    mutations = []
    for i in range(count):
        # every third test only checks the type: its mutation survives
        check = f"isinstance(f{i}(1), int)" if i % 3 == 2 else f"f{i}(1) == {i + 2}"
        (root / "tests" / f"test_f{i}.py").write_text(
            f"import time\n\nfrom pkg import f{i}\n\n\ndef test_f{i}():\n    time.sleep({sleep})\n"
            f"    assert {check}\n")
        (root / "gates" / f"g{i}.yaml").write_text(
            f"gate: g{i}\nrequires: {{gpus: 1}}\ndriver:\n  type: pytest\n  run: [tests/test_f{i}.py]\n"
            "  timeout: 120\n")
        mutations.append(f"- mutation: m{i}\n  file: pkg/__init__.py\n  anchor: \"return x + {i + 1}\\n\"\n"
                         f"  replace: \"return x - {i + 1}\\n\"\n  expect: {{red: [g{i}]}}\n")
    (root / "mutations" / "m.yaml").write_text("".join(mutations))
    (root / ".gitignore").write_text("__pycache__/\n.redfirst/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bench")


def timed(root: Path, *args: str) -> tuple[float, dict[str, str], int]:
    start = time.monotonic()
    proc = subprocess.run(["mutate", "--root", str(root), "--no-cache", "--json", *args], cwd=root,
                          capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - start
    if "Traceback" in proc.stderr:
        sys.exit(f"mutate {' '.join(args)}: traceback:\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    return took, {i["id"]: i["verdict"] for i in doc["items"]}, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutations", type=int, default=8)
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-results", action="store_true", help="print only; do not append to bench/RESULTS.md")
    args = ap.parse_args()
    from redfirst.leases import minislurm

    load_start = os.getloadavg()
    runs: dict[str, list[float]] = {"local -n 1": [], "slurm -n 1": [], "slurm -n 2": []}
    agree = True
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
        root = Path(tmp) / "proj"
        project(root, args.mutations, args.sleep)
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        os.environ["REDFIRST_LEASES_DB"] = str(Path(tmp) / "state" / "leases.db")
        with minislurm.private("bench", rest=False, gpus=2):
            reference: dict[str, str] | None = None
            for r in range(args.rounds):
                for label, extra in (("local -n 1", ["-n", "1"]), ("slurm -n 1", ["--slurm", "-n", "1"]),
                                     ("slurm -n 2", ["--slurm", "-n", "2"])):
                    took, outcomes, code = timed(root, *extra)
                    runs[label].append(took)
                    reference = reference or outcomes
                    agree = agree and outcomes == reference
                    print(f"round {r + 1} {label}: {took:.2f} s, exit {code}, "
                          f"{sum(v == 'KILLED' for v in outcomes.values())} KILLED "
                          f"{sum(v == 'SURVIVED' for v in outcomes.values())} SURVIVED", flush=True)
    load_end = os.getloadavg()
    med = {k: statistics.median(v) for k, v in runs.items()}
    speedup = med["slurm -n 1"] / med["slurm -n 2"]
    overhead = (med["slurm -n 1"] - med["local -n 1"]) / args.mutations
    head = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    lines = [
        f"## Mutations: `mutate --slurm -n N` against local `mutate -n 1` (issue #17 item 4, "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC)",
        "",
        f"`python bench/mutations_fleet.py --mutations {args.mutations} --sleep {args.sleep} --rounds {args.rounds}` "
        f"at {head}: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}, "
        f"`uptime` load {load_start[0]:.2f} at start, {load_end[0]:.2f} at end. A private single-node Slurm "
        f"(redfirst.leases.minislurm, 2 GPU GRES slots on loopback); {args.mutations} mutations, one pytest gate each "
        f"whose test sleeps {args.sleep} s; `--no-cache`, the three runs interleaved per round; medians.",
        "",
        "| run | " + " | ".join(f"round {i + 1} s" for i in range(args.rounds)) + " | median s |",
        "|---|" + "---|" * (args.rounds + 1),
        *[f"| {k} | " + " | ".join(f"{x:.2f}" for x in v) + f" | {med[k]:.2f} |" for k, v in runs.items()],
        "",
        f"- speed-up of 2 Slurm workers over 1: **{speedup:.2f}x**",
        f"- per-mutation overhead of leasing (slurm -n 1 minus local -n 1, per mutation): **{overhead:+.2f} s**",
        f"- same outcomes in every run: **{'yes' if agree else 'NO'}**",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_results:
        with (HERE / "RESULTS.md").open("a") as f:
            f.write("\n" + text)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
