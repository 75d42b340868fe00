"""Local backend: acquire + release latency, uncontended, on a fresh lease file (target p50 <= 6 ms).

    python bench/leases_local.py [--n 2000] [--append]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from leases_common import append, machine, ms, pct  # noqa: E402

from redfirst.leases.backends.local import LocalBackend  # noqa: E402
from redfirst.leases.config import LeasesConfig  # noqa: E402
from redfirst.leases.model import LeaseRequest  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--append", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["REDFIRST_LEASES_DB"] = str(Path(tmp) / "leases.db")
        b = LocalBackend(LeasesConfig())
        for _ in range(50):   # warm up: schema, page cache, WAL
            lease = b.acquire(LeaseRequest(box="local"), 0)
            b.release(lease.id, lease.token)
        samples = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            lease = b.acquire(LeaseRequest(box="local"), 0)
            b.release(lease.id, lease.token)
            samples.append(time.perf_counter() - t0)
    lines = [f"- machine: {machine()}",
             f"- {args.n} acquire + release cycles of box `local`, one process, SQLite WAL lease file in a tmp dir",
             f"- p50 {ms(pct(samples, 0.5))}, p99 {ms(pct(samples, 0.99))}, max {ms(max(samples))} "
             f"(target p50 <= 6 ms)"]
    if args.append:
        append("Local acquire + release latency (`bench/leases_local.py`)", lines)
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
