"""Helpers of the tests whose leased command leaves a daemon behind: wait for the pid it writes,
and ask whether a pid is still a live process (not a zombie)."""

from __future__ import annotations

import time
from pathlib import Path


def daemon_pid(path: Path) -> int:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"the daemon never wrote {path}")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False
