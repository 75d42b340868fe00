"""Fuzz every file kind redfirst reads (gate, mutation, config, lease, preset, store) with many more documents than the suite does.

    python bench/fuzz_files.py --examples 5000

Runs tests/gates/test_fuzz_files.py (the in-process loaders, hypothesis-mutated documents) with
REDFIRST_FUZZ_EXAMPLES documents per kind, and prints how many documents were checked, how many
were distinct, and the failures (0 tracebacks and every error naming file:line is a pass).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=5000, help="documents per kind (gate, mutation, config, lease, preset, store)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts"
        env = {**os.environ, "REDFIRST_FUZZ_EXAMPLES": str(args.examples), "REDFIRST_FUZZ_COUNT_FILE": str(counts)}
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly",
                               "tests/gates/test_fuzz_files.py", "-k", "mutated_documents"], cwd=ROOT, env=env)
        elapsed = time.monotonic() - started
        rows = [line.split() for line in counts.read_text().splitlines()] if counts.exists() else []
    total = sum(int(r[1]) for r in rows)
    distinct = sum(int(r[2]) for r in rows)
    for name, n, d in rows:
        print(f"{name:9} {n:>7} documents ({d} distinct)")
    print(f"total     {total:>7} documents ({distinct} distinct) in {elapsed:.0f} s; pytest exit {proc.returncode}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
