"""SIGSTOP where it hurts most: a waiter stopped past WAITER_STALE, and a process stopped inside
the machine-wide writer lock (issue #12: re-grant within TTL + 1 s, never a hang).

A stopped waiter is dropped from its line; once continued it must join the line again, not
wait out its whole `--wait` beside a free slot. While stopped it is passed over, keeping its
place: a grant to it would sit unused for a TTL. A process stopped while it holds the writer
lock would stall every grant of every lease file on the machine: it is killed (its uncommitted
write rolls back), never resumed, since a resumed holder would act while others judge it stopped.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from redfirst.leases import clock
from redfirst.leases.backends.local import WAITER_STALE, LocalBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest


def _child(repo: Path, body: str) -> subprocess.Popen[str]:
    code = ("import sys, time; from pathlib import Path; from redfirst.leases.backends.local import LocalBackend;"
            " from redfirst.leases.config import load; from redfirst.leases.model import LeaseRequest;"
            f" b = LocalBackend(load(Path({str(repo)!r})));\n{body}")
    return subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ), stdout=subprocess.PIPE, text=True)


def test_a_waiter_stopped_past_the_stale_bound_is_granted_once_continued(lease_db: Path, repo: Path) -> None:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    held = b.acquire(LeaseRequest(box="one", ttl=120), 0, detached=True)
    waiter = _child(repo, "l = b.acquire(LeaseRequest(box='one', ttl=60), 60); print('granted', l.id, flush=True)")
    try:
        while not b._conn().execute("SELECT 1 FROM waiters").fetchone():
            assert waiter.poll() is None
            time.sleep(0.05)
        waiter.send_signal(signal.SIGSTOP)
        time.sleep(WAITER_STALE + 1)
        b.release(held.id, held.token)        # serves the line: the stopped waiter is dropped as gone
        waiter.send_signal(signal.SIGCONT)
        out, _ = waiter.communicate(timeout=20)   # well inside its 60 s wait: the slot is free
        assert waiter.returncode == 0 and out.startswith("granted")
    finally:
        waiter.kill()


def test_a_process_stopped_inside_the_writer_lock_does_not_stall_other_lease_files_and_is_never_resumed(
        tmp_path: Path, repo: Path, machine_locks: Path, monkeypatch) -> None:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    LocalBackend(load(repo))
    # A writer of lease file a, stopped by SIGSTOP while it holds the machine-wide writer lock, in the
    # middle of a write it has not committed.
    stuck = _child(repo, "with b._tx() as conn:\n    conn.execute(\"INSERT INTO meta VALUES ('late', 'x')\")\n"
                         "    print('in', flush=True)\n    time.sleep(3)\nprint('out', flush=True)")
    try:
        assert stuck.stdout is not None and stuck.stdout.readline() == "in\n"
        stuck.send_signal(signal.SIGSTOP)
        monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
        other = _child(repo, "l = b.acquire(LeaseRequest(box='one', ttl=60), 0); print('granted', l.id, flush=True)")
        out, _ = other.communicate(timeout=30)
        assert other.returncode == 0 and out.startswith("granted"), "lease file b waited on a stopped writer of a"
        late, _ = stuck.communicate(timeout=30)
        # Never resumed: it did not run on past its stop, and what it had not committed is not in its file.
        assert "out" not in late and stuck.returncode == -signal.SIGKILL
        monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
        a = LocalBackend(load(repo))
        assert a._conn().execute("SELECT 1 FROM meta WHERE key = 'late'").fetchone() is None
        gate = os.open(machine_locks / "writer.lock", os.O_RDWR)
        fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)     # and it no longer holds the lock
        os.close(gate)
        monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
        assert any(e.event == "stop" and f"pid {stuck.pid}" in e.detail for e in LocalBackend(load(repo)).audit())
    finally:
        stuck.kill()
        stuck.wait()


def test_a_stopped_waiter_is_passed_over_for_a_live_one_behind_it(lease_db: Path, repo: Path) -> None:
    """A grant to a stopped waiter would sit unused for a whole TTL while live waiters behind it wait."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    held = b.acquire(LeaseRequest(box="one", ttl=120), 0, detached=True)
    first = _child(repo, "l = b.acquire(LeaseRequest(box='one', ttl=60), 60); print('granted', l.id, flush=True)")
    try:
        while not b._conn().execute("SELECT 1 FROM waiters").fetchone():
            assert first.poll() is None
            time.sleep(0.05)
        first.send_signal(signal.SIGSTOP)
        second = _child(repo, "l = b.acquire(LeaseRequest(box='one', ttl=60), 60); print('granted', l.id, "
                              "flush=True); b.release(l.id, l.token)")
        while b._conn().execute("SELECT COUNT(DISTINCT ticket) FROM waiters").fetchone()[0] < 2:
            assert second.poll() is None
            time.sleep(0.05)
        b.release(held.id, held.token)         # serves the line: the first waiter is stopped
        grant = next(e for e in reversed(b.audit()) if e.event == "grant")
        assert f"pid {second.pid}" in grant.holder, f"granted to {grant.holder}, not the live waiter {second.pid}"
        out, _ = second.communicate(timeout=30)
        assert second.returncode == 0 and out.startswith("granted")
        first.send_signal(signal.SIGCONT)       # it kept its place: served once it runs again
        out, _ = first.communicate(timeout=30)
        assert first.returncode == 0 and out.startswith("granted")
    finally:
        first.kill()


def test_a_grant_that_expired_before_its_waiter_took_it_sends_the_waiter_back_to_the_line(
        lease_db: Path, repo: Path) -> None:
    """A waiter descheduled (here: stopped) past its TTL between its grant and taking it still gets a lease."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    held = b.acquire(LeaseRequest(box="one", ttl=120), 0, detached=True)
    waiter = _child(repo, "l = b.acquire(LeaseRequest(box='one', ttl=1), 60); print('granted', l.id, flush=True)")
    try:
        while not b._conn().execute("SELECT 1 FROM waiters").fetchone():
            assert waiter.poll() is None
            time.sleep(0.05)
        with b._tx() as conn:      # the release grants to the waiter, live; it is stopped before it can look
            now = clock.now()
            b._end(conn, conn.execute("SELECT * FROM leases WHERE id = ?", (held.id,)).fetchone(), now,
                   "release", "released by its holder")
            b._serve(conn, "one", now)
            waiter.send_signal(signal.SIGSTOP)
        granted = b.audit()[-1]
        assert granted.event == "grant" and f"pid {waiter.pid}" in granted.holder
        while time.time() < granted.at + 2:
            time.sleep(0.1)
        waiter.send_signal(signal.SIGCONT)
        out, _ = waiter.communicate(timeout=30)
        assert waiter.returncode == 0 and out.startswith("granted"), "the waiter lost its place for good"
    finally:
        waiter.kill()
