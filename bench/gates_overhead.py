"""Gate engine overhead, measured side by side in one run (never a timed test).

1. `gates run` over one gate wrapping a pytest suite, against the same suite under raw
   `python -m pytest`, alternated ROUNDS times; the ratio of medians is the overhead
   (target: at most 1.10x).
2. 4 independent CPU-bound gates with `-n 1` against `-n 2` (target: at least 1.6x faster).

Usage: python bench/gates_overhead.py [--rounds N]   (prints a Markdown block for RESULTS.md)
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SUITE = textwrap.dedent("""
    import hashlib
    import pytest

    @pytest.mark.parametrize("n", range(200))
    def test_work(n):
        data = str(n).encode()
        for _ in range(25000):
            data = hashlib.sha256(data).digest()
        assert len(data) == 32
""")

BUSY = "import hashlib\nd=b'x'\nfor _ in range({n}): d=hashlib.sha256(d).digest()\nprint('1 passed, 0 failed')\n"


def timed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    gates = shutil.which("gates") or sys.exit("gates is not installed")
    work = Path(tempfile.mkdtemp(prefix="redfirst-bench-"))
    (work / "tests").mkdir()
    (work / "tests" / "test_suite.py").write_text(SUITE)
    (work / "pytest.ini").write_text("[pytest]\n")
    (work / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (work / "gates").mkdir()
    (work / "gates" / "suite.yaml").write_text("gate: suite\ndriver: {type: pytest, run: [tests]}\n"
                                               "assert: {cases: {min: 200}}\n")
    par = work / "par"
    (par / "gates").mkdir(parents=True)
    (par / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    for i in range(4):
        (par / f"busy{i}.py").write_text(BUSY.format(n=1_500_000))
        (par / "gates" / f"busy{i}.yaml").write_text(
            f"gate: busy{i}\ndriver: {{type: command, run: [{sys.executable}, busy{i}.py], format: plain}}\n")

    raw, gated, serial, parallel = [], [], [], []
    timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], work)  # warm caches
    for _ in range(args.rounds):
        raw.append(timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], work))
        gated.append(timed([gates, "run", "-q", "--root", str(work)], work))
        serial.append(timed([gates, "run", "-q", "-n", "1", "--root", str(par)], par))
        parallel.append(timed([gates, "run", "-q", "-n", "2", "--root", str(par)], par))
    shutil.rmtree(work, ignore_errors=True)
    m = statistics.median
    print(f"### Gate engine overhead ({time.strftime('%Y-%m-%d')})\n")
    print(f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}; "
          f"{args.rounds} alternating rounds, medians.\n")
    print("| measurement | median s | all runs (s) |\n|---|---|---|")
    for name, values in (("raw `python -m pytest` (200 cases)", raw), ("`gates run` of that suite", gated),
                         ("4 CPU-bound gates, `-n 1`", serial), ("4 CPU-bound gates, `-n 2`", parallel)):
        print(f"| {name} | {m(values):.2f} | {' '.join(f'{v:.2f}' for v in values)} |")
    print(f"\n- `gates run` / raw pytest: **{m(gated) / m(raw):.3f}x** (target at most 1.10x); the difference, "
          f"{m(gated) - m(raw):.2f} s, is fixed per run (interpreter start-up and imports, JUnit, sealing the record)")
    print(f"- `-n 1` / `-n 2`: **{m(serial) / m(parallel):.2f}x faster** (target at least 1.6x)")


if __name__ == "__main__":
    main()
