"""Shared bits of the leases benchmarks: the machine line and appending to bench/RESULTS.md."""

from __future__ import annotations

import os
import platform
import statistics
import sys
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADING = "## Leases"


def machine() -> str:
    return (f"{os.cpu_count()} cores, `{' '.join(platform.uname())}`, Python {platform.python_version()}")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


def append(title: str, lines: list[str]) -> None:
    """Append one result block under the `## Leases` heading (created at the end when missing)."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    block = f"\n### {title}\n\n" + "\n".join(lines) + "\n"
    if HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{HEADING}\n"
    head = text.index(HEADING) + len(HEADING)
    nxt = text.find("\n## ", head)
    at = len(text) if nxt == -1 else nxt
    text = text[:at].rstrip("\n") + "\n" + block + text[at:]
    RESULTS.write_text(text)
    print("\n".join([f"### {title}", *lines]))


def median(values: list[float]) -> float:
    return statistics.median(values)


if __name__ == "__main__":
    sys.exit("a helper module, not a benchmark")
