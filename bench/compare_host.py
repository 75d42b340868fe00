"""Host comparator speed: bit_exact and close on two 64 MiB float32 arrays, and loading them.

Run: python bench/compare_host.py [--append bench/RESULTS.md]
Each figure is the best of 5 runs: wall clock (perf_counter) and CPU time (process_time).
"""

from __future__ import annotations

import argparse
import functools
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from redfirst.gates import compare, evidence, observations

MIB = 1 << 20
N = 64 * MIB // 4  # float32 values in 64 MiB


def best(fn: Callable[[], Any], runs: int = 5) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds (CPU time is steadier on a shared, loaded machine)."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--append", type=Path, help="append a markdown section to this file")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    ref = rng.standard_normal(N, dtype=np.float32).reshape(4096, N // 4096)
    same = ref.copy()
    many = ref.copy()
    many.reshape(-1)[::1000] = -many.reshape(-1)[::1000]  # 16,778 differing values
    last = ref.copy()
    last.reshape(-1)[-1] = np.nextafter(last.reshape(-1)[-1], np.float32(np.inf))
    shape = ref.shape

    def be(cand: np.ndarray, hashes: bool = True) -> compare.Comparison:
        return compare.bit_exact(ref, cand, "float32", "float32", shape, shape, hashes=hashes)

    rows: list[tuple[str, tuple[float, float], str]] = []
    for label, cand in (("identical", same), ("1 differing (last)", last), ("16,778 differing", many)):
        rows.append((f"bit_exact, {label}, with sha256 of both", best(functools.partial(be, cand)),
                     be(cand).describe()))
        rows.append((f"bit_exact, {label}, no hashes", best(functools.partial(be, cand, False)), ""))
    near = ref + np.float32(1e-7)
    result = compare.close(ref, near, "float32", "float32", shape, shape, rtol=1e-6, max_ulp=4)
    rows.append(("close rtol=1e-6 max_ulp=4, with sha256", best(lambda: compare.close(
        ref, near, "float32", "float32", shape, shape, rtol=1e-6, max_ulp=4)), result.describe()[:60] + "..."))
    rows.append(("close, no hashes", best(lambda: compare.close(
        ref, near, "float32", "float32", shape, shape, rtol=1e-6, max_ulp=4, hashes=False)), ""))

    with tempfile.TemporaryDirectory() as tmp:
        rec = evidence.Recorder(Path(tmp))
        rec.tensor("ref", ref)
        rec.tensor("cand", last)
        rows.append(("observations.read (2 tensor records, size checks)", best(lambda: observations.read(tmp)), ""))
        ev = observations.read(tmp)
        rows.append(("load_tensor, 64 MiB raw file (page cache warm)",
                     best(lambda: observations.load_tensor(tmp, ev.tensors[0])), ""))

    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    cpus = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    lines = [
        "## Host comparator",
        "",
        f"`python bench/compare_host.py`: two 64 MiB float32 arrays ({N:,} values, shape {list(shape)}),",
        f"best of 5. Machine: {cpus} cores, `{uname}`, Python {platform.python_version()}, "
        f"numpy {np.__version__}; 1-minute load average {load} when it finished (other jobs share the cores).",
        "",
        "| operation | wall s | CPU s | report |",
        "|---|---|---|---|",
        *(f"| {label} | {wall:.3f} | {cpu:.3f} | {report} |" for label, (wall, cpu), report in rows),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.append:
        with open(args.append, "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
