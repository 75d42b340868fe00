"""Local lease expiry on CLOCK_BOOTTIME (issue #12): lease files an older redfirst made, another boot, a newer file.

Real SQLite files written with the schemas older redfirst versions shipped (copied here from
redfirst/leases/backends/local.py at those commits), real `leases` processes. The wall-clock step itself
is tests/leases/test_review_revl.py::test_a_wall_clock_step_never_ends_a_live_holders_lease.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases import clock
from redfirst.leases.backends.local import SCHEMA_VERSION, LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseError, LeaseRequest, NotGranted

# The schema of 948bc2d..b9d06e3 (expiries on the wall clock, no boot id).
SCHEMA_WALL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta (key, value) VALUES ('creation_id', 'c0ffee000001');
CREATE TABLE fences (box TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE leases (
  id TEXT PRIMARY KEY, box TEXT NOT NULL, slots TEXT NOT NULL, whole_box INTEGER NOT NULL,
  fence INTEGER NOT NULL, holder TEXT NOT NULL, holder_pid INTEGER, holder_boot TEXT, holder_start INTEGER,
  ttl REAL NOT NULL, granted_at REAL NOT NULL, expires_at REAL NOT NULL, deadline REAL,
  purpose TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, ended_at REAL, end_reason TEXT);
CREATE INDEX leases_held ON leases(box) WHERE state = 'held';
CREATE TABLE lease_slots (lease_id TEXT NOT NULL, box TEXT NOT NULL, slot TEXT NOT NULL, live INTEGER NOT NULL);
CREATE UNIQUE INDEX one_live_lease_per_slot ON lease_slots(box, slot) WHERE live = 1;
CREATE INDEX lease_slots_by_lease ON lease_slots(lease_id);
CREATE TABLE procs (lease_id TEXT NOT NULL, pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL,
  pgid INTEGER, term_at REAL);
CREATE TABLE waiters (seq INTEGER PRIMARY KEY AUTOINCREMENT, ticket INTEGER, box TEXT NOT NULL,
  pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL, seen REAL NOT NULL,
  gpus INTEGER NOT NULL, whole INTEGER NOT NULL, ttl REAL NOT NULL, max_runtime REAL,
  purpose TEXT NOT NULL, detached INTEGER NOT NULL);
CREATE INDEX waiters_by_box ON waiters(box, ticket);
CREATE TABLE granted (ticket INTEGER PRIMARY KEY, lease_id TEXT NOT NULL);
CREATE TABLE box_slots (box TEXT PRIMARY KEY, slots TEXT NOT NULL);
CREATE TABLE reservations (box TEXT NOT NULL, slot TEXT NOT NULL, ticket INTEGER NOT NULL, PRIMARY KEY (box, slot));
CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, event TEXT NOT NULL,
  lease_id TEXT NOT NULL, box TEXT NOT NULL, slots TEXT NOT NULL, fence INTEGER NOT NULL, holder TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '');
"""

# The first schema (3d9812d): no meta, no queue columns in waiters, no reservations.
SCHEMA_FIRST = """
CREATE TABLE fences (box TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE leases (
  id TEXT PRIMARY KEY, box TEXT NOT NULL, slots TEXT NOT NULL, whole_box INTEGER NOT NULL,
  fence INTEGER NOT NULL, holder TEXT NOT NULL, holder_pid INTEGER, holder_boot TEXT, holder_start INTEGER,
  ttl REAL NOT NULL, granted_at REAL NOT NULL, expires_at REAL NOT NULL, deadline REAL,
  purpose TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, ended_at REAL, end_reason TEXT);
CREATE TABLE lease_slots (lease_id TEXT NOT NULL, box TEXT NOT NULL, slot TEXT NOT NULL, live INTEGER NOT NULL);
CREATE UNIQUE INDEX one_live_lease_per_slot ON lease_slots(box, slot) WHERE live = 1;
CREATE TABLE procs (lease_id TEXT NOT NULL, pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL,
  pgid INTEGER, term_at REAL);
CREATE TABLE waiters (seq INTEGER PRIMARY KEY AUTOINCREMENT, ticket INTEGER, box TEXT NOT NULL,
  pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL, seen REAL NOT NULL);
CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, event TEXT NOT NULL,
  lease_id TEXT NOT NULL, box TEXT NOT NULL, slots TEXT NOT NULL, fence INTEGER NOT NULL, holder TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '');
"""


def _wall_file(db: Path, expires_in: float) -> None:
    """A lease file as the older redfirst left it: lease local.1 held, expiring `expires_in` s from now (wall)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA_WALL)
        conn.execute("INSERT INTO fences VALUES ('local', 1)")
        conn.execute("INSERT INTO box_slots VALUES ('local', 'cpu0')")
        conn.execute("INSERT INTO leases (id, box, slots, whole_box, fence, holder, ttl, granted_at, expires_at,"
                     " state) VALUES ('local.1', 'local', 'cpu0', 0, 1, 'old detached', 600, ?, ?, 'held')",
                     (now - 1, now + expires_in))
        conn.execute("INSERT INTO lease_slots VALUES ('local.1', 'local', 'cpu0', 1)")
    conn.close()


def at(db: Path, monkeypatch: pytest.MonkeyPatch) -> LocalBackend:
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(db))
    return LocalBackend(LeasesConfig())


def test_a_lease_file_of_the_wall_clock_schema_opens_with_its_live_lease_still_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "leases.db"
    _wall_file(db, 300.0)
    b = at(db, monkeypatch)
    token = "local:local:c0ffee000001:1"
    assert [(x.id, x.token) for x in b.status()] == [("local.1", token)]
    with pytest.raises(NotGranted, match="held by lease local.1"):
        b.acquire(LeaseRequest(box="local"), 0, detached=True)
    renewed = b.renew("local.1", token)
    assert 590 < renewed.expires_at - time.time() <= 600
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_lease_of_the_wall_clock_schema_that_had_expired_comes_out_expired(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "leases.db"
    _wall_file(db, -5.0)
    b = at(db, monkeypatch)
    assert b.status() == []
    assert b.acquire(LeaseRequest(box="local"), 0, detached=True).id == "local.2"


def test_an_older_redfirst_cannot_grant_from_an_upgraded_lease_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Its grant would carry no boottime expiry (a lease this version never expires): refused, saying why."""
    db = tmp_path / "leases.db"
    _wall_file(db, -5.0)
    at(db, monkeypatch).status()
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.IntegrityError, match="upgraded by a newer redfirst"):
        conn.execute("INSERT INTO leases (id, box, slots, whole_box, fence, holder, ttl, granted_at, expires_at,"
                     " state) VALUES ('local.2', 'local', 'cpu0', 0, 2, 'old', 30, 1, 2, 'held')")
    conn.close()


def test_a_lease_file_of_the_first_schema_opens_and_leases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "leases.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(SCHEMA_FIRST)
        conn.execute("INSERT INTO waiters (ticket, box, pid, boot, start, seen) VALUES (1, 'local', 1, 'x', 1, 1)")
    conn.close()
    b = at(db, monkeypatch)
    lease = b.acquire(LeaseRequest(box="local"), 0, detached=True)
    b.release(lease.id, lease.token)


def test_a_lease_file_of_another_boot_holds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "leases.db"
    held = at(db, monkeypatch).acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    booted = time.time() - clock.boottime()
    with sqlite3.connect(db) as conn:       # as if the machine had rebooted since (its lease last renewed before)
        conn.execute("UPDATE meta SET value = 'an-earlier-boot' WHERE key = 'boot_id'")
        conn.execute("UPDATE leases SET granted_at = ?, expires_at = ?", (booted - 700, booted - 100))
    conn.close()
    b = at(db, monkeypatch)
    assert b.status() == []
    ended = [e for e in b.audit() if e.event == "expire"]
    assert [e.lease_id for e in ended] == [held.id] and "rebooted" in ended[0].detail
    assert b.acquire(LeaseRequest(box="local"), 0, detached=True).id != held.id


def test_a_lease_file_a_newer_redfirst_made_is_refused_naming_why(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "leases.db"
    at(db, monkeypatch)
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(LeaseError, match="made by a newer redfirst"):
        at(db, monkeypatch)
    for cmd in (["status"], ["run", "--box", "local", "--", "true"]):
        out = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), *cmd], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "REDFIRST_LEASES_DB": str(db)})
        assert "Traceback" not in out.stderr and out.returncode == 2, out.stderr
        assert "newer redfirst" in out.stderr


AHEAD_ACQUIRE = """
import sys
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseRequest, NotGranted
b = LocalBackend(LeasesConfig())
try:
    b.acquire(LeaseRequest(box="local", ttl=30), 2)
except NotGranted:
    b.status()
    sys.exit(75)
sys.exit(0)
"""


def test_a_process_whose_time_namespace_sets_boottime_ahead_never_ends_a_live_holders_lease(
        lease_db: Path, tmp_path: Path) -> None:
    """CLOCK_BOOTTIME is per time namespace (unshare --time, a container, a CRIU restore): the expiry clock is
    the machine's, with this process's namespace offset taken out."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a time namespace needs root and unshare")
    probe = subprocess.run(["unshare", "--time", "--boottime", "3600", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"this kernel gives no time namespace: {probe.stderr.strip()}")
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "--backend", "local",
                               "run", "--box", "local", "--ttl", "30", "--", "sh", "-c", "sleep 4; echo DONE"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert holder.stderr is not None
    assert "token" in holder.stderr.readline()
    ahead = subprocess.run(["unshare", "--time", "--boottime", "3600", sys.executable, "-c", AHEAD_ACQUIRE],
                           capture_output=True, text=True, timeout=60)
    out, err = holder.communicate(timeout=60)
    assert (holder.returncode, out.strip()) == (0, "DONE"), err
    assert ahead.returncode == 75, ahead.stderr
