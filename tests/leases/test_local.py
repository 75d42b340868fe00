"""The local backend: real SQLite, real processes, real flock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from redfirst.leases import procs
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig, load
from redfirst.leases.model import LeaseRequest, NotGranted, StaleLease, Unsatisfiable


def backend(root: Path | None = None) -> LocalBackend:
    return LocalBackend(load(root) if root else LeasesConfig())


def fleet(repo: Path, text: str) -> LocalBackend:
    (repo / "redfirst.yaml").write_text(textwrap.dedent(text))
    return backend(repo)


def wait_for(predicate, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def test_without_gpus_the_local_box_has_one_cpu_slot(lease_db: Path) -> None:
    box = next(b for b in backend().boxes() if b.name == "local")
    assert box.slots == ("cpu0",) or box.slots[0] == "gpu0"


def test_second_lease_on_a_held_slot_is_not_granted_and_names_the_holder(lease_db: Path) -> None:
    b = backend()
    first = b.acquire(LeaseRequest(box="local"), 0)
    with pytest.raises(NotGranted, match=f"held by lease {first.id}"):
        b.acquire(LeaseRequest(box="local"), 0.1)
    b.release(first.id, first.token)
    second = b.acquire(LeaseRequest(box="local"), 0)
    assert second.fence > first.fence


def test_fencing_tokens_strictly_increase_per_box(lease_db: Path) -> None:
    b = backend()
    fences = []
    for _ in range(5):
        lease = b.acquire(LeaseRequest(box="local"), 0)
        fences.append(lease.fence)
        b.release(lease.id, lease.token)
    assert fences == sorted(set(fences)) and len(fences) == 5


def test_stale_token_is_refused_by_renew_and_release(lease_db: Path) -> None:
    b = backend()
    old = b.acquire(LeaseRequest(box="local", ttl=0.2), 0)
    time.sleep(0.3)
    new = b.acquire(LeaseRequest(box="local"), 0)     # reaps the expired one, supersedes its token
    with pytest.raises(StaleLease, match=f"superseded by {new.token}"):
        b.renew(old.id, old.token)
    with pytest.raises(StaleLease):
        b.release(old.id, old.token)
    with pytest.raises(StaleLease, match="is not its token"):
        b.renew(new.id, old.token)
    assert b.renew(new.id, new.token).expires_at >= new.expires_at


def test_dead_holder_is_cleared_by_the_next_grant(lease_db: Path) -> None:
    b = backend()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from redfirst.leases.backends.local import LocalBackend
        from redfirst.leases.config import LeasesConfig
        from redfirst.leases.model import LeaseRequest
        LocalBackend(LeasesConfig()).acquire(LeaseRequest(box="local", ttl=60), 0)
        print("held", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(NotGranted):
        b.acquire(LeaseRequest(box="local"), 0)
    holder.kill()
    holder.wait()
    t0 = time.monotonic()
    lease = b.acquire(LeaseRequest(box="local"), 5)
    assert time.monotonic() - t0 < 1.0        # long before the 60 s TTL
    expired = [e for e in b.audit() if e.event == "expire"]
    assert expired and "died" in expired[-1].detail and lease.fence == expired[-1].fence + 1


def _run_holder(ttl: float) -> tuple[subprocess.Popen[bytes], int]:
    """A `leases run` client whose command (a child holding the slot lock) writes its pid."""
    client = subprocess.Popen(
        [sys.executable, "-m", "redfirst.leases.cli", "run", "--box", "local", "--ttl", str(ttl), "--",
         "sh", "-c", "echo $$; exec sleep 60"], stdout=subprocess.PIPE)
    assert client.stdout is not None
    child = int(client.stdout.readline())
    return client, child


def test_orphaned_child_keeps_the_slot_until_stopped(lease_db: Path) -> None:
    b = backend()
    client, child = _run_holder(ttl=60)
    client.send_signal(signal.SIGKILL)
    client.wait()
    assert procs.identify(child) is not None
    with pytest.raises(NotGranted, match="busy"):
        b.acquire(LeaseRequest(box="local"), 1.0)    # client dead, child alive: the slot stays taken
    os.kill(child, signal.SIGKILL)
    lease = b.acquire(LeaseRequest(box="local"), 5)
    assert lease.box == "local"


def test_holder_that_misses_heartbeats_loses_the_lease_and_its_processes_are_stopped(lease_db: Path) -> None:
    b = backend()
    ttl = 1.5
    client, child = _run_holder(ttl=ttl)
    client.send_signal(signal.SIGSTOP)          # alive, but no more heartbeats
    try:
        t0 = time.monotonic()
        lease = b.acquire(LeaseRequest(box="local"), 15)
        waited = time.monotonic() - t0
        # The last heartbeat came up to TTL/3 before the stop; then the TTL, then SIGTERM to the child.
        assert ttl * 2 / 3 - 0.2 < waited < ttl + 1.0 + 2.5
        wait_for(lambda: procs.identify(child) is None
                 or Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
        events = [e.event for e in b.audit()]
        assert "stop" in events and "expire" in events
        assert lease.fence >= 2
    finally:
        client.send_signal(signal.SIGCONT)
        client.wait(10)


def test_stale_token_is_refused_by_the_exec_wrapper(lease_db: Path) -> None:
    b = backend()
    old = b.acquire(LeaseRequest(box="local"), 0)
    b.release(old.id, old.token)
    out = subprocess.run([*b.run_prefix(old), "echo", "ran"], capture_output=True, text=True)
    assert out.returncode == 75 and "ran" not in out.stdout and "released" in out.stderr


def test_release_stops_the_commands_the_lease_started(lease_db: Path) -> None:
    b = backend()
    lease = b.acquire(LeaseRequest(box="local"), 0)
    child = subprocess.Popen([*b.run_prefix(lease), "sleep", "60"])
    wait_for(lambda: b._conn().execute("SELECT COUNT(*) FROM procs").fetchone()[0] == 1)
    b.release(lease.id, lease.token)
    assert child.wait(5) == -signal.SIGTERM


def test_waiters_are_served_first_come_first_served(lease_db: Path) -> None:
    b = backend()
    first = b.acquire(LeaseRequest(box="local"), 0)
    order: list[int] = []

    def waiter(i: int) -> None:
        mine = backend()
        lease = mine.acquire(LeaseRequest(box="local"), 20)
        order.append(i)
        time.sleep(0.05)
        mine.release(lease.id, lease.token)

    threads = []
    for i in range(4):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        wait_for(lambda n=i + 1: b._conn().execute("SELECT COUNT(*) FROM waiters").fetchone()[0] == n)
    b.release(first.id, first.token)
    for t in threads:
        t.join(30)
    assert order == [0, 1, 2, 3]


def test_gpus_and_whole_box_requests_on_a_declared_box(lease_db: Path, repo: Path) -> None:
    b = fleet(repo, """
        leases:
          boxes:
            thor: {gpus: 2, labels: {gpu_model: h200, sm: "9.0"}}
    """)
    one = b.acquire(LeaseRequest(box="thor", gpus=1), 0)
    assert one.slots == ("gpu0",)
    with pytest.raises(NotGranted):
        b.acquire(LeaseRequest(box="thor", whole_box=True), 0)
    two = b.acquire(LeaseRequest(select="gpu_model=H200", gpus=1), 0)
    assert two.slots == ("gpu1",) and b.env(two)["CUDA_VISIBLE_DEVICES"] == "1"
    with pytest.raises(Unsatisfiable, match="gpus>=3"):
        b.acquire(LeaseRequest(box="thor", gpus=3), 0)
    with pytest.raises(Unsatisfiable, match="cuda>=12.4"):
        b.acquire(LeaseRequest(select="cuda>=12.4"), 0)


def test_every_grant_renew_expiry_and_release_is_audited(lease_db: Path) -> None:
    b = backend()
    a = b.acquire(LeaseRequest(box="local", ttl=0.2), 0)
    b.renew(a.id, a.token)
    time.sleep(0.3)
    c = b.acquire(LeaseRequest(box="local"), 0)
    b.release(c.id, c.token)
    assert [(e.event, e.lease_id) for e in b.audit()] == [
        ("grant", a.id), ("renew", a.id), ("expire", a.id), ("grant", c.id), ("release", c.id)]


def leases_cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=timeout)


# -- local: what a leased command leaves behind ------------------------------------------------------


def test_a_background_child_left_after_release_is_stopped_and_the_slot_granted_again(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    out = leases_cli(repo, "run", "--box", "local", "--", "sh", "-c",
                     f"sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}; exit 0")
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        t0 = time.monotonic()
        again = leases_cli(repo, "run", "--box", "local", "--wait", "8", "--", "true")
        assert again.returncode == 0, again.stderr
        assert time.monotonic() - t0 < 8
        assert not _alive(bg), "the released lease's background child still runs"
    finally:
        _kill(bg)


def test_a_child_that_left_the_process_group_is_stopped_too(repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    out = leases_cli(repo, "run", "--box", "local", "--", "sh", "-c", f"setsid sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}")
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        again = leases_cli(repo, "run", "--box", "local", "--wait", "8", "--", "true")
        assert again.returncode == 0, again.stderr
        assert not _alive(bg)
    finally:
        _kill(bg)


def test_a_child_that_did_not_inherit_the_slot_lock_is_stopped_when_its_leader_has_exited(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    # Python's subprocess closes inherited fds: the child runs without the slot lock, so only its
    # process group ties it to the lease. The lease must not end while it runs on unstopped.
    pidfile = tmp_path / "bg.pid"
    script = ("import subprocess as s; p = s.Popen(['sleep', '60'], stdout=s.DEVNULL, stderr=s.DEVNULL); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid))")
    out = leases_cli(repo, "run", "--box", "local", "--", sys.executable, "-c", script)
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        deadline = time.monotonic() + 5
        while _alive(bg) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(bg), "the lease was released while a process it started still runs"
    finally:
        _kill(bg)


def test_a_dead_client_whose_grandchild_runs_without_the_lock_keeps_the_slot(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    script = ("import subprocess as s, time; p = s.Popen(['sleep', '60'], stdout=s.DEVNULL, stderr=s.DEVNULL); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(0.5)")
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--ttl", "60", "--", sys.executable, "-c", script], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    bg = int(pidfile.read_text())
    try:
        client.send_signal(signal.SIGKILL)
        client.wait()
        time.sleep(1.0)                  # the leased command itself has exited; its child runs on
        b = LocalBackend(load(repo))
        with pytest.raises(NotGranted):
            b.acquire(LeaseRequest(box="local"), 1.0)
        assert _alive(bg)
    finally:
        _kill(bg)
    lease = LocalBackend(load(repo)).acquire(LeaseRequest(box="local"), 5)
    assert lease.box == "local"


def test_an_expired_lease_s_lockless_child_blocks_the_slot_until_it_is_gone(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    b = LocalBackend(load(repo))
    # A TTL long enough for the exec wrapper to start and register under load, short enough to wait out.
    lease = b.acquire(LeaseRequest(box="local", ttl=3.0), 0, detached=True)
    # A process of the lease that ignores SIGTERM and holds no lock (a child that did not inherit it).
    child = subprocess.Popen([*b.run_prefix(lease), sys.executable, "-c",
                              "import os, signal, time; os.closerange(3, 4096); "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
                             stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while b._conn().execute("SELECT COUNT(*) FROM procs").fetchone()[0] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(3.1)                  # past its TTL: the next grant ends it and SIGTERMs the child
        after = b.acquire(LeaseRequest(box="local"), 10)
        assert child.poll() is not None, f"{after.id} granted while the expired lease's child still ran"
    finally:
        child.kill()
        child.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_slot_freed_while_a_whole_box_request_heads_the_line_is_reserved_to_it_in_the_same_transaction(
        lease_db: Path, repo: Path) -> None:
    # First come, first served with no backfilling: the freed slot is the head's from its expiry on,
    # and the audit says so then, not only when the rest of the box frees.
    b = fleet(repo, "leases:\n  boxes:\n    two: {gpus: 2}\n")
    a = b.acquire(LeaseRequest(box="two", gpus=1, ttl=60), 0, detached=True)
    short = b.acquire(LeaseRequest(box="two", gpus=1, ttl=1.0), 0, detached=True)
    got: list = []
    waiter = threading.Thread(target=lambda: got.append(
        backend(repo).acquire(LeaseRequest(box="two", whole_box=True, ttl=60), 60)))
    waiter.start()
    wait_for(lambda: any(e.event == "expire" and e.lease_id == short.id for e in b.audit()))
    events = b.audit()
    at = next(i for i, e in enumerate(events) if e.event == "expire" and e.lease_id == short.id)
    reserve = events[at + 1]
    assert (reserve.event, reserve.box, reserve.slots) == ("reserve", "two", short.slots)
    # The expiry is dated at the lease's expiry; it was recorded in the transaction that reserved the slot.
    assert reserve.at_boot is not None and f"recorded at {reserve.at_boot:.6f}" in events[at].detail
    assert "1 of the 2 slots" in reserve.detail
    with pytest.raises(NotGranted):     # a later request does not take the reserved slot
        b.acquire(LeaseRequest(box="two", gpus=1, ttl=60), 0.3)
    b.release(a.id, a.token)
    waiter.join(30)
    assert got and set(got[0].slots) == {"gpu0", "gpu1"}
    grant = next(e for e in b.audit() if e.event == "grant" and e.lease_id == got[0].id)
    release = next(e for e in b.audit() if e.event == "release" and e.lease_id == a.id)
    assert grant.seq > release.seq and grant.at == release.at
