"""The audit log is in commit order, and the torture's checker reads it so.

Every write of every lease file is made under the one machine-wide writer lock; an event
stamped before its writer got that lock would sort before events committed ahead of it, and a
decision taken on that stale clock (is this lease expired?) would be taken on a past that other
lease files have already moved on from. A real double grant must still fail the checker.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest, NotGranted
from redfirst.leases.torture import TortureResult, _check


def _blocked_on(path: Path) -> bool:
    """Whether some process waits for a flock on `path` (a '->' line of /proc/locks names its inode)."""
    ino = os.stat(path).st_ino
    return any("->" in line and line.split()[-3].endswith(f":{ino}")
               for line in Path("/proc/locks").read_text().splitlines())


@pytest.mark.parametrize("op", ["release", "renew"])
def test_an_event_is_stamped_when_its_writer_holds_the_writer_lock(op: str, lease_db: Path, repo: Path,
                                                                  machine_locks: Path) -> None:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    lease = b.acquire(LeaseRequest(box="one", ttl=60), 0, detached=True)
    gate = os.open(machine_locks / "writer.lock", os.O_RDWR)
    fcntl.flock(gate, fcntl.LOCK_EX)      # another writer is inside its transaction
    code = (f"from pathlib import Path; from redfirst.leases.backends.local import LocalBackend; from redfirst.leases.config import load; "
            f"b = LocalBackend(load(Path({str(repo)!r}))); b.{op}({lease.id!r}, {lease.token!r})")
    child = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ))
    try:
        while not _blocked_on(machine_locks / "writer.lock"):
            assert child.poll() is None, "the child finished without waiting for the writer lock"
            time.sleep(0.01)
        time.sleep(0.2)
        freed = time.time()
        fcntl.flock(gate, fcntl.LOCK_UN)
        assert child.wait(60) == 0
    finally:
        os.close(gate)
        child.kill()
    event = b.audit()[-1]
    assert event.event == op
    assert event.at >= freed, f"{op} stamped {freed - event.at:.3f} s before it could have committed"


def test_the_checker_fails_a_real_double_grant_across_two_lease_files(tmp_path: Path, repo: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two lease files that do not share the machine-wide folder (as before issue #12) grant gpu0 twice."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    backends, leases = [], []
    for n in (1, 2):
        monkeypatch.setenv("REDFIRST_LOCK_DIR", str(tmp_path / f"locks{n}"))
        monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / f"db{n}" / "leases.db"))
        b = LocalBackend(load(repo))
        backends.append(b)
        leases.append(b.acquire(LeaseRequest(box="tort", ttl=60), 0))
    log = tmp_path / "holders.log"
    t = time.time()
    log.write_text("".join(f"A {os.getpid()} {b.creation_id}/{ls.id} gpu0 {t + i:.6f} 0.0\n"
                           f"R {os.getpid()} {b.creation_id}/{ls.id} gpu0 {t + 5:.6f}\n"
                           for i, (b, ls) in enumerate(zip(backends, leases, strict=True))))
    for b, ls in zip(backends, leases, strict=True):
        b.release(ls.id, ls.token)
    res = TortureResult(2, 1)
    _check(res, log, [], 60.0, *backends)
    assert len(res.overlaps_audit) == 1 and "tort/gpu0" in res.overlaps_audit[0]
    assert len(res.overlaps_holders) == 1


def test_the_checker_reads_one_lease_file_in_commit_order(lease_db: Path, repo: Path, tmp_path: Path) -> None:
    """A wall clock stepped back for a while (then set right) does not make the checker see a double grant."""
    import sqlite3

    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    ids = []
    for _ in range(3):
        lease = b.acquire(LeaseRequest(box="tort", ttl=60), 0)
        b.release(lease.id, lease.token)
        ids.append(lease.id)
    with sqlite3.connect(lease_db) as conn:     # the clock was 1 h behind from the first release to the third grant
        conn.execute("UPDATE audit SET at = at - 3600 WHERE (lease_id = ? AND event = 'release') OR lease_id = ?",
                     (ids[0], ids[1]))
    log = tmp_path / "holders.log"
    log.touch()
    res = TortureResult(1, 3)
    _check(res, log, [], 60.0, b)
    assert res.overlaps_audit == []


def test_the_checker_is_not_fooled_by_a_reused_pid(tmp_path: Path, repo: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder of file b SIGKILLed, its slot granted by file a, and a later victim with the same pid."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(repo))
    holder = subprocess.Popen([sys.executable, "-c", (
        "from pathlib import Path; from redfirst.leases.backends.local import LocalBackend; from redfirst.leases.config import load;"
        f" from redfirst.leases.model import LeaseRequest; b = LocalBackend(load(Path({str(repo)!r})));"
        " b.acquire(LeaseRequest(box='tort', ttl=60), 0); print('held', flush=True); import time; time.sleep(60)")],
        env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    killed = time.time()
    holder.kill()
    holder.wait()
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    a.acquire(LeaseRequest(box="tort", ttl=60), 0)        # the dead holder's claim is void
    log = tmp_path / "holders.log"
    log.touch()
    res = TortureResult(2, 1)
    _check(res, log, [(holder.pid, killed), (holder.pid, time.time() + 100)], 60.0, a, b)
    assert res.overlaps_audit == []


def test_the_checker_knows_a_stopped_holder_died_by_the_kill_that_followed_its_stop(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A holder of file b SIGSTOPped, SIGKILLed later (its claim is void once dead), its slot granted by file a."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(repo))
    holder = subprocess.Popen([sys.executable, "-c", (
        "from pathlib import Path; from redfirst.leases.backends.local import LocalBackend; from redfirst.leases.config import load;"
        f" from redfirst.leases.model import LeaseRequest; b = LocalBackend(load(Path({str(repo)!r})));"
        " b.acquire(LeaseRequest(box='tort', ttl=60), 0); print('held', flush=True); import time; time.sleep(60)")],
        env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    stopped = time.time()
    holder.send_signal(signal.SIGSTOP)
    killed = time.time()
    holder.kill()
    holder.wait()
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    a.acquire(LeaseRequest(box="tort", ttl=60), 0)        # the dead holder's claim is void
    log = tmp_path / "holders.log"
    log.touch()
    res = TortureResult(1, 1)
    res.stopped_at[holder.pid] = [stopped]
    _check(res, log, [(holder.pid, stopped), (holder.pid, killed)], 60.0, a, b)
    assert res.overlaps_audit == []


def test_a_grant_is_stamped_with_the_clock_reading_that_judged_the_other_files_claims(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File b's claim expires at E; file a's transaction reads the clock before E and grants only if that
    reading, its stamp, is past E: a later reading may not decide while the earlier one stamps."""
    import sqlite3

    from redfirst.leases import clock

    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    held = LocalBackend(load(repo)).acquire(LeaseRequest(box="tort", ttl=30), 0, detached=True)
    with sqlite3.connect(tmp_path / "b" / "leases.db") as conn:
        expiry = conn.execute("SELECT expires_boot FROM leases WHERE id = ?", (held.id,)).fetchone()[0]
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    real = clock.now()
    readings = iter([real.at(expiry - 1.0)])        # the first reading, then the clock moves past E
    monkeypatch.setattr(clock, "now", lambda: next(readings, real.at(expiry + 10.0)))
    try:
        a.acquire(LeaseRequest(box="tort", ttl=30), 0)
    except NotGranted:
        pass
    grants = [e for e in a.audit() if e.event == "grant"]
    assert grants, "the later reading, past E, grants"
    assert all(g.at_boot is not None and g.at_boot > expiry for g in grants), \
        f"granted at {grants[0].at_boot - expiry:+.1f} s from the claim's expiry it judged passed"


def test_a_regrant_delay_counts_from_when_a_worker_began_to_wait(lease_db: Path, repo: Path, tmp_path: Path) -> None:
    """A killed holder's slot is owed to a waiter only once one waits: an idle stretch is not a late re-grant."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    first = b.acquire(LeaseRequest(box="tort", ttl=60), 0, detached=True)
    killed = first.granted_at + 0.001
    b.release(first.id, first.token)          # its end, as the dead holder's reaping would record it
    asked = time.time()
    second = b.acquire(LeaseRequest(box="tort", ttl=60), 0, detached=True)
    b.release(second.id, second.token)
    cid = b.creation_id
    log = tmp_path / "holders.log"
    log.write_text(f"W 111 {first.granted_at - 0.01:.6f}\nA 111 {cid}/{first.id} gpu0 {first.granted_at:.6f} 0.3\n"
                   f"W 222 {asked:.6f}\nA 222 {cid}/{second.id} gpu0 {second.granted_at:.6f} 0.0\n"
                   f"R 222 {cid}/{second.id} gpu0 {second.granted_at + 0.001:.6f}\n")
    res = TortureResult(2, 1)
    _check(res, log, [(111, killed)], 60.0, b)
    assert res.killed_holding == 1
    assert res.regrant_delays == [pytest.approx(second.granted_at - asked, abs=1e-6)]


def _killed_holder(repo: Path, ttl: float = 60) -> int:
    """A holder of a lease of box tort (file REDFIRST_LEASES_DB), SIGKILLed while it holds: its pid."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "from pathlib import Path; from redfirst.leases.backends.local import LocalBackend; from redfirst.leases.config import load;"
        f" from redfirst.leases.model import LeaseRequest; b = LocalBackend(load(Path({str(repo)!r})));"
        f" b.acquire(LeaseRequest(box='tort', ttl={ttl}), 0); print('held', flush=True); import time; time.sleep(60)")],
        env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    holder.kill()
    holder.wait()
    return holder.pid


def test_the_audit_alone_proves_a_grant_over_a_dead_holders_claim_and_the_checker_needs_that_evidence(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File b's holder dies holding gpu0, file a grants it; b never runs again, so b's audit shows its lease live."""
    import json
    import sqlite3

    from redfirst.leases.torture import audit_overlaps

    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(repo))
    pid = _killed_holder(repo)
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    a.acquire(LeaseRequest(box="tort", ttl=60), 0, detached=True)
    grant = a.audit()[-1]
    over = json.loads(grant.evidence)["over"]
    assert [(v["db"], v["lease"], v["void"]) for v in over] == [(b.creation_id, "tort.1", "dead")]
    assert over[0]["at_boot"] <= grant.at_boot and f"holder pid {pid} and its processes dead" in grant.detail

    def streams() -> list[list]:
        from dataclasses import replace
        return [[replace(e, lease_id=f"{x.creation_id}/{e.lease_id}") for e in x.audit()] for x in (a, b)]

    assert audit_overlaps(streams()) == []              # no kill list: the audit carries the proof
    res = TortureResult(2, 1)
    log = tmp_path / "holders.log"
    log.touch()
    _check(res, log, [], 60.0, a, b)
    assert res.overlaps_audit == []
    with sqlite3.connect(tmp_path / "a" / "leases.db") as conn:     # the same grant without its evidence
        conn.execute("UPDATE audit SET evidence = '' WHERE event = 'grant'")
    conn.close()
    found = audit_overlaps(streams())
    assert len(found) == 1 and "no evidence" in found[0] and f"{b.creation_id}/tort.1" in found[0], found


def test_a_reap_dates_a_dead_holders_end_no_later_than_another_files_grant_found_it_dead(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File a's command holds gpu0's lock when file b reaps: b ends its lease anyway, dated at a's observation."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(repo))
    _killed_holder(repo)
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    lease = a.acquire(LeaseRequest(box="tort", ttl=60), 0, detached=True)
    found = a.audit()[-1].at_boot
    lock = os.open(a.lock_path("tort", "gpu0"), os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)       # a's command runs on the slot now
    try:
        time.sleep(0.2)
        assert b.status() == []
    finally:
        os.close(lock)
    ended = b.audit()[-1]
    assert ended.event == "expire" and ended.lease_id == "tort.1"
    assert found is not None and ended.at_boot is not None and ended.at_boot <= found, (ended, found)
    assert "found dead by lease tort.1" in ended.detail and "recorded at" in ended.detail
    a.release(lease.id, lease.token)


def test_an_expiry_is_dated_at_the_lease_expiry_not_at_the_reap_that_found_it(lease_db: Path, repo: Path) -> None:
    import sqlite3

    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    b = LocalBackend(load(repo))
    lease = b.acquire(LeaseRequest(box="tort", ttl=0.3), 0, detached=True)
    with sqlite3.connect(lease_db) as conn:
        expiry = conn.execute("SELECT expires_boot FROM leases WHERE id = ?", (lease.id,)).fetchone()[0]
    conn.close()
    time.sleep(1.0)
    assert b.status() == []
    ended = b.audit()[-1]
    assert (ended.event, ended.at_boot) == ("expire", expiry)
    assert ended.at == pytest.approx(lease.expires_at, abs=0.05) and "recorded at" in ended.detail


def test_a_dead_holders_lease_reaped_after_its_ttl_is_dated_at_the_grant_that_found_it_dead(
        tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File b reaps only after the TTL ran out: the end took effect when file a's grant found the holder dead."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    tort: {gpus: 1}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(repo))
    _killed_holder(repo, ttl=1.0)
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(repo))
    a.acquire(LeaseRequest(box="tort", ttl=60), 0, detached=True)
    found = a.audit()[-1].at_boot
    time.sleep(1.5)                           # b's lease is past its TTL when b next reaps
    assert b.status() == []
    ended = b.audit()[-1]
    assert ended.event == "expire" and found is not None and ended.at_boot is not None
    assert ended.at_boot <= found, f"dated {ended.at_boot - found:.3f} s after file a found its holder dead"
