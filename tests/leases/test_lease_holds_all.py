"""A lease holds everything its command started (issue 34.5): a daemon of `leases run` is ended before its slot is
granted again, and a lease file another machine uses is never taken over as if this machine had rebooted."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_helpers import alive as _alive
from daemon_helpers import daemon_pid as _pid

from redfirst.leases import clock, procs
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseError, LeaseRequest

# Double fork, setsid, every descriptor closed (the slot's lock too), an empty environment: nothing of the lease
# is left on it but its ancestry.
DAEMON = """\
import os, sys
pidfile = sys.argv[1]
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.closerange(0, 1 << 16)
os.execve(sys.executable, [sys.executable, "-c",
          "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)", pidfile], {})
"""


def leases(root: Path, *args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("leases") or str(Path(sys.executable).with_name("leases"))
    return subprocess.run([exe, "--root", str(root), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)




@pytest.fixture
def root(repo: Path, lease_db: Path) -> Path:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
    (repo / "daemon.py").write_text(DAEMON)
    return repo


def test_a_daemon_of_a_leased_command_is_ended_before_the_slot_is_granted_again(root: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    # The command returns once its daemon runs on its own (it wrote its pid).
    first = leases(root, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c",
                   f'"{sys.executable}" daemon.py {pidfile}; while [ ! -s {pidfile} ]; do sleep 0.05; done',
                   cwd=root)
    daemon = _pid(pidfile)
    try:
        assert first.returncode == 0, first.stderr
        assert not _alive(daemon), f"the daemon {daemon} outlived its lease: {first.stderr}"
        # The next lease of the slot runs beside nothing of the last one.
        second = leases(root, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c", f"kill -0 {daemon} && echo BESIDE")
        assert second.returncode != 0 and "BESIDE" not in second.stdout, second.stdout + second.stderr
        audit = leases(root, "audit", "--limit", "50").stdout
        assert f"pid {daemon}" in audit and "at release" in audit, audit
    finally:
        if _alive(daemon):
            os.kill(daemon, 9)


def _renewed_now_by_another_boot(db: Path) -> None:
    with sqlite3.connect(db) as conn:       # another machine's boot holds it, renewed just now
        conn.execute("UPDATE meta SET value = 'another-machines-boot' WHERE key = 'boot_id'")
        conn.execute("UPDATE leases SET holder_boot = 'another-machines-boot', holder = 'ci@other pid 1'"
                     " WHERE state = 'held'")
    conn.close()


def test_a_live_lease_of_another_machine_is_never_ended_here(lease_db: Path) -> None:
    held = LocalBackend(LeasesConfig()).acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    _renewed_now_by_another_boot(lease_db)
    with pytest.raises(LeaseError, match="another machine") as refused:
        LocalBackend(LeasesConfig())
    assert str(lease_db) in str(refused.value) and "REDFIRST_LEASES_DB" in str(refused.value)
    with sqlite3.connect(lease_db) as conn:
        assert conn.execute("SELECT state FROM leases WHERE id = ?", (held.id,)).fetchone()[0] == "held"
    conn.close()


def test_a_lease_file_taken_by_another_machine_refuses_every_write_of_this_one(lease_db: Path) -> None:
    here = LocalBackend(LeasesConfig())     # opened first, then the other machine takes the file over
    with sqlite3.connect(lease_db) as conn:
        conn.execute("UPDATE meta SET value = 'another-machines-boot' WHERE key = 'boot_id'")
    conn.close()
    with pytest.raises(LeaseError, match="another machine"):
        here.acquire(LeaseRequest(box="local"), 0, detached=True)


def test_a_lease_of_this_machines_earlier_boot_is_still_ended_as_rebooted(lease_db: Path) -> None:
    held = LocalBackend(LeasesConfig()).acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    booted = time.time() - clock.boottime()
    with sqlite3.connect(lease_db) as conn:       # last renewed before this boot began
        conn.execute("UPDATE meta SET value = 'an-earlier-boot' WHERE key = 'boot_id'")
        conn.execute("UPDATE leases SET holder_boot = 'an-earlier-boot', granted_at = ?, expires_at = ?",
                     (booted - 700, booted - 100))
    conn.close()
    b = LocalBackend(LeasesConfig())
    assert b.status() == []
    ended = [e for e in b.audit() if e.event == "expire" and e.lease_id == held.id]
    assert ended and "rebooted" in ended[0].detail and procs.boot_id()
