"""A lease file shared by two machines (an NFS XDG_STATE_HOME): a lease of another boot is ended as "rebooted" only
when its record proves it this machine's earlier boot; another machine's lease is never ended here, however
recently this machine booted (issue 34.5). Real SQLite; "another machine" is another boot id and another
machine-wide lock folder (REDFIRST_LOCK_DIR, the private machine of tests)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from redfirst.leases import clock, procs
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseError, LeaseRequest


def _as_of_an_earlier_boot(db: Path, renewed_ago: float) -> None:
    """The file's boot (and its held leases') become another boot, last renewed `renewed_ago` s before this one
    began: the other machine booted as long before its last heartbeat as this one after it."""
    booted = time.time() - clock.boottime()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'an-earlier-boot' WHERE key = 'boot_id'")
        conn.execute("UPDATE leases SET holder_boot = 'an-earlier-boot', granted_at = ?, expires_at = ? + ttl"
                     " WHERE state = 'held'", (booted - renewed_ago, booted - renewed_ago))
    conn.close()


def _state(db: Path, lease_id: str) -> str:
    with sqlite3.connect(db) as conn:
        state = str(conn.execute("SELECT state FROM leases WHERE id = ?", (lease_id,)).fetchone()[0])
    conn.close()
    return state


def test_a_machine_booted_since_the_last_heartbeat_never_ends_another_machines_live_lease(
        lease_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held = LocalBackend(LeasesConfig()).acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    there = procs.machine_id()
    # Its last heartbeat came 5 s before this machine booted: live for another 595 s on the machine holding it.
    _as_of_an_earlier_boot(lease_db, renewed_ago=5)
    monkeypatch.setenv("REDFIRST_LOCK_DIR", str(tmp_path / "another-machines-locks"))
    here = procs.machine_id()
    assert here != there
    with pytest.raises(LeaseError, match="another machine") as refused:
        LocalBackend(LeasesConfig())
    assert there in str(refused.value) and here in str(refused.value), refused.value
    assert _state(lease_db, held.id) == "held"
    # Refused on every open, whatever the renewal times say (an hour before this boot: long expired by them).
    _as_of_an_earlier_boot(lease_db, renewed_ago=3600)
    with pytest.raises(LeaseError, match="another machine"):
        LocalBackend(LeasesConfig())
    assert _state(lease_db, held.id) == "held"


def test_this_machines_earlier_boot_is_ended_as_rebooted_however_recent(lease_db: Path) -> None:
    held = LocalBackend(LeasesConfig()).acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    _as_of_an_earlier_boot(lease_db, renewed_ago=5)
    b = LocalBackend(LeasesConfig())
    assert b.status() == []
    ended = [e for e in b.audit() if e.event == "expire" and e.lease_id == held.id]
    assert ended and "rebooted" in ended[0].detail
    assert b.acquire(LeaseRequest(box="local"), 0, detached=True).box == "local"
