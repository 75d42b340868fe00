"""Another program holding SQLite's write lock on the lease file: `--wait` bounds the wait for it too."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from redfirst.leases import cli

HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()       # held until the test closes our stdin
conn.execute("ROLLBACK")
"""


@contextmanager
def foreign_write_lock(db: Path) -> Iterator[subprocess.Popen[str]]:
    """A real process (not redfirst) in an EXCLUSIVE transaction on `db` until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


@pytest.fixture
def root(repo: Path, lease_db: Path, capfd: pytest.CaptureFixture[str]) -> Path:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 2}\n")
    assert cli.main(["--root", str(repo), "run", "--box", "thor", "--", "true"]) == 0   # the lease file exists
    capfd.readouterr()
    return repo


@pytest.mark.parametrize("wait", [0.0, 1.5])
def test_a_write_lock_held_past_the_wait_is_not_granted_within_the_wait(root: Path, lease_db: Path, wait: float,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """Round 4 row 11 of issue 34: `sqlite3` holding the lease file's write lock made `leases run --wait 0`
    wait SQLite's own 30 s busy timeout, then fail `database is locked` (exit 2). The wait is the caller's:
    not granted (75) within it, saying the lease file is locked, and the command never ran."""
    with foreign_write_lock(lease_db):
        start = time.monotonic()
        code = cli.main(["--root", str(root), "run", "--wait", str(wait), "--box", "thor", "--", "touch",
                         str(root / "ran")])
        took = time.monotonic() - start
    err = capfd.readouterr().err
    assert code == 75, err
    assert "locked" in err and "the command never ran" in err, err
    assert took < wait + 1.0, took
    assert not (root / "ran").exists()
    assert cli.main(["--root", str(root), "run", "--box", "thor", "--", "true"]) == 0   # nothing left behind


def test_a_write_lock_that_ends_within_the_wait_is_granted(root: Path, lease_db: Path,
                                                           capfd: pytest.CaptureFixture[str]) -> None:
    with foreign_write_lock(lease_db) as holder:
        def release() -> None:
            time.sleep(0.5)
            assert holder.stdin is not None
            holder.stdin.close()

        import threading
        t = threading.Thread(target=release)
        t.start()
        code = cli.main(["--root", str(root), "run", "--wait", "5", "--box", "thor", "--", "true"])
        t.join()
    assert code == 0, capfd.readouterr().err


@pytest.mark.parametrize("wait", ["inf", "nan", "1e308"])
def test_a_wait_of_any_float_bounds_the_locks_without_a_traceback(root: Path, wait: str,
                                                                  capfd: pytest.CaptureFixture[str]) -> None:
    """Bounding SQLite's busy timeout by the wait turned `--wait inf` (wait as long as it takes) and `1e308` into
    an OverflowError traceback and `nan` into a ValueError: the busy timeout is the time left, within 1 ms and
    SQLite's own 30 s, whatever float the wait is."""
    code = cli.main(["--root", str(root), "run", "--wait", wait, "--box", "thor", "--", "true"])
    err = capfd.readouterr().err
    assert code == 0 and "Traceback" not in err, err


@pytest.fixture
def short_busy(monkeypatch: pytest.MonkeyPatch) -> float:
    """SQLite's per-transaction busy bound scaled from 30 s to 0.5 s, so "a transaction held past it" takes a second."""
    import redfirst.leases.backends.local.claims as claims
    import redfirst.leases.backends.local.store as store
    monkeypatch.setattr(claims, "BUSY_TIMEOUT", 0.5)
    monkeypatch.setattr(store, "BUSY_TIMEOUT", 0.5)
    return 0.5


def test_a_wait_longer_than_sqlites_own_bound_outlasts_a_foreign_transaction(root: Path, lease_db: Path,
                                                                               short_busy: float,
                                                                               capfd: pytest.CaptureFixture[str]
                                                                               ) -> None:
    """Round 5 left this open: one foreign transaction held past SQLite's busy bound (30 s) refused `leases run
    --wait 60` at 30 s. The wait is the caller's: a lock that ends within it is granted, however long it was."""
    import threading
    with foreign_write_lock(lease_db) as holder:
        def release() -> None:
            time.sleep(short_busy * 3)
            assert holder.stdin is not None
            holder.stdin.close()

        t = threading.Thread(target=release)
        t.start()
        code = cli.main(["--root", str(root), "run", "--wait", "10", "--box", "thor", "--", "true"])
        t.join()
    assert code == 0, capfd.readouterr().err


@pytest.mark.parametrize("command, code", [
    (["status"], 2), (["renew", "{lease}"], 2), (["release", "{lease}"], 2),
    (["acquire", "thor", "--gpus", "1", "--wait", "0"], 75),
    (["run", "--wait", "0.3", "--box", "thor", "--gpus", "1", "--", "true"], 75),
])
def test_every_command_under_a_foreign_transaction_keeps_its_bound_and_names_the_holder(
        root: Path, lease_db: Path, short_busy: float, command: list[str], code: int,
        capfd: pytest.CaptureFixture[str]) -> None:
    """A foreign program in a transaction on the lease file: each command gives up within its own bound (--wait,
    else SQLite's busy bound) with its exit code, and says which process holds the lock (pid and command line)."""
    assert cli.main(["--root", str(root), "acquire", "thor", "--gpus", "1"]) == 0
    lease_id = capfd.readouterr().out.split()[0]
    with foreign_write_lock(lease_db) as holder:
        start = time.monotonic()
        got = cli.main(["--root", str(root), *[w.format(lease=lease_id) for w in command]])
        took = time.monotonic() - start
    err = capfd.readouterr().err
    assert got == code and "Traceback" not in err, err
    assert took < short_busy + 1.0, took
    assert f"pid {holder.pid}" in err and "import sqlite3" in err, err
