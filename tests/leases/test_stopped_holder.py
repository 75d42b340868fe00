"""A holder stopped with SIGSTOP, command and all, loses its slot within TTL + 1 s (issue #12).

The grace between SIGTERM and SIGKILL comes out of the TTL: the lease's processes get SIGTERM
(and SIGCONT, since a stopped process cannot act on it) a grace before the lease expires, and
SIGKILL when it expires.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest

TTL = 3.0


def _tree(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                kids.setdefault(int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(d.name))
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def test_a_sigstopped_holder_and_command_are_regranted_within_ttl_plus_one_second(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    started = tmp_path / "started"
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--ttl", str(TTL), "--", "sh", "-c", f"touch {started}; exec sleep 60"],
                              stderr=subprocess.DEVNULL)
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not started.exists():
            assert time.monotonic() < deadline and client.poll() is None, "the leased command never started"
            time.sleep(0.02)
        tree = _tree(client.pid)
        assert len(tree) >= 2
        for pid in tree:
            os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        lease = LocalBackend(load(repo)).acquire(LeaseRequest(box="local", ttl=TTL), 30)
        regrant = time.monotonic() - stopped
        assert lease.fence == 2
        assert regrant <= TTL + 1.0, f"re-granted {regrant:.2f}s after the holder stopped (TTL {TTL:g}s)"
    finally:
        for pid in tree:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        client.wait()


def test_a_sigstopped_holder_whose_command_left_a_child_in_a_session_of_its_own_is_regranted_within_ttl_plus_one(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    # The child took the slot's lock with it into a session of its own (setsid: out of the command's process group)
    # and ignores SIGTERM. Stopped with the holder and the command, it must still be gone by the lease's TTL.
    ttl = 6.0       # a grace of 2 s: a SIGTERM sent only once the lease expired would free the slot at TTL + 2 s
    started = tmp_path / "started"
    command = f"setsid sh -c 'trap \"\" TERM; touch {started}; exec sleep 60' & exec sleep 60"
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--ttl", str(ttl), "--", "sh", "-c", command], stderr=subprocess.DEVNULL)
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not started.exists():
            assert time.monotonic() < deadline and client.poll() is None, "the leased command never started"
            time.sleep(0.02)
        tree = _tree(client.pid)
        assert len(tree) >= 3
        for pid in tree:
            os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        lease = LocalBackend(load(repo)).acquire(LeaseRequest(box="local", ttl=ttl), 30)
        regrant = time.monotonic() - stopped
        assert lease.fence == 2
        assert regrant <= ttl + 1.0, f"re-granted {regrant:.2f}s after the holder stopped (TTL {ttl:g}s)"
    finally:
        for pid in tree:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        client.wait()
