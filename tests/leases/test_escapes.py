"""A leased command's child that leaves everything a lease tracks it by (its process group and session, and the
slot's lock fd) still ends with the lease (issue #12): real `leases run` processes, real double forks."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases import procs

# Forks, leaves the session and process group, forks again, closes every fd past stdio (the slot's lock with
# them), and runs on with stdio on /dev/null: a daemon, as `daemon(3)` makes one.
DAEMONIZES = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(3, 65536)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(60)
    os._exit(0)
time.sleep(0.5)
"""


def leases(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(db.parent), *args],
                          env={**os.environ, "REDFIRST_LEASES_DB": str(db)}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ends", ["released", "expired"])
def test_a_daemonized_child_of_a_leased_command_ends_with_the_lease(lease_db: Path, tmp_path: Path, ends: str) -> None:
    pidfile = tmp_path / "daemon.pid"
    daemon = None
    try:
        if ends == "released":
            out = leases(lease_db, "run", "--box", "local", "--ttl", "30", "--", sys.executable, "-c", DAEMONIZES,
                         str(pidfile))
            assert out.returncode == 0, out.stderr
        else:       # its holder is SIGKILLed once the daemon runs: the lease ends by its TTL
            holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box",
                                       "local", "--ttl", "2", "--", sys.executable, "-c",
                                       DAEMONIZES + "time.sleep(60)\n", str(pidfile)],
                                      env={**os.environ, "REDFIRST_LEASES_DB": str(lease_db)})
            deadline = time.monotonic() + 30
            while not pidfile.exists() or not pidfile.read_text():
                assert time.monotonic() < deadline
                time.sleep(0.05)
            holder.kill()
            holder.wait()
            time.sleep(2.5)      # past its TTL
        daemon = procs.identify(int(pidfile.read_text()))
        if ends == "released":      # `leases run` ends what its command left before its release (issue 34.5)
            assert daemon is None, f"the daemon {daemon} outlived its released lease: {out.stderr}"
            assert "at release: stopped" in out.stderr, out.stderr
            return
        assert daemon is not None
        second = leases(lease_db, "run", "--box", "local", "--ttl", "30", "--wait", "10", "--", "true")
        assert second.returncode == 0, second.stderr
        assert not procs.is_alive(daemon), f"the first lease's daemon {daemon} ran on beside the second lease's command"
    finally:
        if daemon is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon.pid, signal.SIGKILL)


def test_a_daemon_of_a_dead_holders_lease_keeps_its_slot_from_another_lease_file_until_it_is_stopped(
        tmp_path: Path) -> None:
    # File b's holder is SIGKILLed once its command has daemonized and exited; file b is never used again.
    b_db, a_db = tmp_path / "b" / "leases.db", tmp_path / "a" / "leases.db"
    pidfile = tmp_path / "daemon.pid"
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--ttl", "6", "--", sys.executable, "-c", DAEMONIZES, str(pidfile)],
                              env={**os.environ, "REDFIRST_LEASES_DB": str(b_db)})
    daemon = None
    try:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        holder.kill()
        holder.wait()
        daemon = procs.identify(int(pidfile.read_text()))
        assert daemon is not None
        time.sleep(0.7)     # the command has exited: only the daemon runs
        second = leases(a_db, "run", "--box", "local", "--ttl", "30", "--wait", "10", "--", "true")
        assert second.returncode == 0, second.stderr
        assert not procs.is_alive(daemon), f"file b's daemon {daemon} ran on beside file a's command"
    finally:
        holder.kill()
        holder.wait()
        if daemon is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon.pid, signal.SIGKILL)
