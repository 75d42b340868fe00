"""A lease file that loses its last commits (a corrupt WAL, whose frames SQLite then drops without a word) never
reissues a lost grant's token nor grants a slot the lost grant still holds (issue #12).

Real `leases` processes and SQLite files: a process keeps a read snapshot open, so the grants after it stay in
the WAL (no checkpoint), is SIGKILLed, and the WAL's first frame is overwritten; the next process to open the file
recovers it without those grants, as after a torn write or a disk that lost them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def leases(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(db.parent), *args],
                         env={**os.environ, "REDFIRST_LEASES_DB": str(db)}, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    return out


@contextmanager
def lost_commits(db: Path) -> Iterator[None]:
    """What is committed inside the block is lost when it ends: the WAL holding it is corrupted."""
    assert leases(db, "status").returncode == 0      # the file and its tables exist, checkpointed
    reader = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]); "
                               "c.execute('BEGIN'); c.execute('SELECT COUNT(*) FROM leases').fetchall(); "
                               "print('reading', flush=True); time.sleep(600)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
        yield
    finally:
        reader.send_signal(signal.SIGKILL)
        reader.wait()
    wal = db.with_name(db.name + "-wal")
    assert wal.stat().st_size > 32 + 24, "the block's commits are not in the WAL"
    with open(wal, "r+b") as f:
        f.seek(32 + 24 + 100)               # WAL header, first frame's header, into its page: its checksum fails
        f.write(os.urandom(64))


def test_a_grant_lost_with_a_corrupt_wal_never_has_its_token_issued_again(lease_db: Path) -> None:
    with lost_commits(lease_db):
        lost_id, lost_token = leases(lease_db, "acquire", "local", "--ttl", "0.3").stdout.split()
    time.sleep(0.5)                          # it expired, wherever it is recorded
    got = leases(lease_db, "acquire", "local", "--ttl", "30")
    assert got.returncode == 0, got.stderr
    new_id, new_token = got.stdout.split()
    assert new_token != lost_token, f"{new_id} was granted {lost_id}'s token {lost_token} again"
    assert leases(lease_db, "renew", new_id, "--token", lost_token).returncode == 1


def test_a_live_grant_lost_with_a_corrupt_wal_keeps_its_slot_until_it_expires(lease_db: Path) -> None:
    with lost_commits(lease_db):
        lost_id, _ = leases(lease_db, "acquire", "local", "--ttl", "3").stdout.split()
    got = leases(lease_db, "acquire", "local", "--ttl", "30", "--wait", "0.3")
    assert got.returncode == 75, f"granted {got.stdout.strip()} while {lost_id} (lost from the file) was live"
    assert lost_id in got.stderr
    time.sleep(3)
    assert leases(lease_db, "acquire", "local", "--ttl", "30").returncode == 0     # busy until its expiry only
