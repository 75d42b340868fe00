"""Stopping what a run left behind, in the warm process and in its forks: both are child
subreapers (prctl), so what a run orphans comes up to them, not to init, and is found
below them in /proc."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36


def subreaper_libc() -> Any | None:
    """The C library, once this process is a child subreaper; None when it cannot become
    one (no prctl, or refused): then no run is claimed clean, and the runner looks for a
    run's leftovers itself."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc if become_subreaper(libc) else None
    except (OSError, ImportError, AttributeError):
        return None


def become_subreaper(libc: Any) -> bool:
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return found


def stop_below(keep: frozenset[int] = frozenset()) -> bool:
    """Stop every process below this one except the children in `keep` (and what is below
    them), as process.run does for a program's tree: SIGTERM, up to half a second's
    grace, SIGKILL; our own children that ended are reaped by pid (never waitpid(-1),
    which would take a kept child's status). True when none is left.

    In a fork: everything its run started (the fork is a subreaper, so what left its
    process group or session is still below it). In the warm process, keeping the live
    forks: what dead forks left (their leftovers come up to us when a fork dies, and
    only then)."""
    me = os.getpid()
    deadline = time.monotonic() + 0.5
    warned: set[int] = set()
    for _ in range(1000):
        for pid in children(me):
            if pid not in keep:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        tree, stack = [], [pid for pid in children(me) if pid not in keep]
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(children(pid))
        if not tree:
            return True
        late = time.monotonic() >= deadline
        for pid in tree:
            if late or pid not in warned:
                warned.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(0.005)
    return False


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
