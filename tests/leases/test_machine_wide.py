"""One GPU, one holder per machine (issue #12): the slot lock is keyed by the GPU's identity, not the lease file.

Real SQLite files, real `leases run` processes, one machine-wide lock folder (the test's own,
through REDFIRST_LOCK_DIR, as every process of one machine shares the default one).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseRequest, NotGranted, StaleLease


def _running(pid: int) -> bool:
    """Neither gone nor a zombie: an exited process stays a zombie in /proc until its parent reaps it,
    and an orphan's parent may be this xdist worker (a subreaper once a test ran gates in-process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def at(db: Path, monkeypatch: pytest.MonkeyPatch) -> LocalBackend:
    monkeypatch.delenv("REDFIRST_LEASES_DB", raising=False)
    return LocalBackend(LeasesConfig(db=db))


def test_two_lease_files_never_grant_one_slot_twice(lease_db: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    a = at(tmp_path / "a" / "leases.db", monkeypatch)
    b = at(tmp_path / "b" / "leases.db", monkeypatch)
    held = a.acquire(LeaseRequest(box="local"), 0, detached=True)
    with pytest.raises(NotGranted, match=f"held by lease {held.id} of lease file {tmp_path / 'a'}"):
        b.acquire(LeaseRequest(box="local"), 0.2, detached=True)
    a.release(held.id, held.token)
    again = b.acquire(LeaseRequest(box="local"), 0, detached=True)
    assert again.token != held.token


def test_a_copied_lease_file_never_grants_the_slot_its_original_holds(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A state folder restored from one CI cache, or copied from a template, into two homes: one creation id twice.
    a_db, b_db = tmp_path / "a" / "leases.db", tmp_path / "b" / "leases.db"
    at(a_db, monkeypatch)
    shutil.copytree(a_db.parent, b_db.parent)     # the file with its WAL, as `cp -r` copies a state folder
    a, b = at(a_db, monkeypatch), at(b_db, monkeypatch)
    held = a.acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    with pytest.raises(NotGranted, match=f"held by lease {held.id} of lease file {tmp_path / 'a'}"):
        got = b.acquire(LeaseRequest(box="local", ttl=600), 0.2, detached=True)
        assert got.token != held.token, "two live holders of one slot, with one token"
    a.release(held.id, held.token)
    assert b.acquire(LeaseRequest(box="local"), 0, detached=True).token != held.token
    # A copy made while a lease is held: the copy's row of it is not a second live lease.
    c_db = tmp_path / "c" / "leases.db"
    held_b = b.status()[0]
    shutil.copytree(b_db.parent, c_db.parent)
    c = at(c_db, monkeypatch)
    assert c.status() == [] and c.creation_id != b.creation_id
    with pytest.raises(NotGranted, match=f"held by lease {held_b.id} of lease file {tmp_path / 'b'}"):
        c.acquire(LeaseRequest(box="local"), 0.2, detached=True)


def test_a_lock_folder_removed_under_a_lease_with_no_command_running_leaves_one_live_holder(
        tmp_path: Path, machine_locks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Between a gate's build and its run (or for `leases acquire`) no process holds the slot's lock:
    # only the claim tells other lease files the slot is held, and a tmp cleaner can remove it.
    a = at(tmp_path / "a" / "leases.db", monkeypatch)
    b = at(tmp_path / "b" / "leases.db", monkeypatch)
    held = a.acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    shutil.rmtree(machine_locks)
    try:
        other = b.acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    except NotGranted:
        return      # the claim survived: one holder
    # The folder lost the claim, so B could grant: A's next heartbeat must see it lost, not renew on.
    with pytest.raises(StaleLease, match=f"superseded: slot cpu0 is held by lease {other.id}"):
        a.renew(held.id, held.token)
    assert [x.token for x in a.status() + b.status()] == [other.token]


def test_a_heartbeat_writes_again_the_claim_a_removed_lock_folder_lost(
        tmp_path: Path, machine_locks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = at(tmp_path / "a" / "leases.db", monkeypatch)
    b = at(tmp_path / "b" / "leases.db", monkeypatch)
    held = a.acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    shutil.rmtree(machine_locks)
    a.renew(held.id, held.token)
    with pytest.raises(NotGranted, match=f"held by lease {held.id} of lease file {tmp_path / 'a'}"):
        b.acquire(LeaseRequest(box="local", ttl=600), 0.2, detached=True)


def test_two_xdg_state_homes_do_not_run_two_commands_on_one_slot(lease_db: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDFIRST_LEASES_DB"}
    argv = [sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local", "--wait", "0",
            "--", "sh", "-c"]
    marker = tmp_path / "first.started"
    first = subprocess.Popen([*argv, f"touch {marker}; sleep 5"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x1")},
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not marker.exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first leased command never started"
            time.sleep(0.05)
        second = subprocess.run([*argv, "echo second ran"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x2")},
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 75, second.stdout + second.stderr
        assert "second ran" not in second.stdout and "held by lease local.1 of lease file" in second.stderr
    finally:
        first.kill()
        first.wait()


def test_a_wiped_lease_file_never_reissues_a_token(lease_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = at(lease_db, monkeypatch)
    first = old.acquire(LeaseRequest(box="local", ttl=0.3), 0, detached=True)
    time.sleep(0.4)                       # expired: its slot is free again
    for f in lease_db.parent.glob(lease_db.name + "*"):
        if f.is_file():
            f.unlink()
    new = at(lease_db, monkeypatch)
    second = new.acquire(LeaseRequest(box="local"), 0, detached=True)
    assert second.id == first.id          # the counter starts over in a wiped file...
    assert second.token != first.token    # ...but the token names the file's creation
    with pytest.raises(StaleLease, match="is not its token"):
        new.renew(second.id, first.token)
    with pytest.raises(StaleLease, match="is not its token"):
        new.release(second.id, first.token)


@pytest.mark.parametrize("xdg", [True, False], ids=["two-state-homes", "one-lease-file"])
def test_a_lock_folder_removed_while_held_does_not_let_a_second_command_on_the_slot(
        xdg: bool, lease_db: Path, tmp_path: Path, machine_locks: Path) -> None:
    """`rm -rf` of the machine-wide folder (a tmp cleaner, a user) while a leased command runs."""
    import shutil

    env = {k: v for k, v in os.environ.items() if k != "REDFIRST_LEASES_DB"}
    if not xdg:
        env["REDFIRST_LEASES_DB"] = str(lease_db)
    argv = [sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local", "--wait", "0",
            "--", "sh", "-c"]
    marker = tmp_path / "first.started"
    first = subprocess.Popen([*argv, f"touch {marker}; sleep 20"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x1")},
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first leased command never started"
            time.sleep(0.05)
        shutil.rmtree(machine_locks)
        second = subprocess.run([*argv, "echo second ran"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x2")},
                                capture_output=True, text=True, timeout=60)
        assert "second ran" not in second.stdout, "two commands ran on one slot at once"
        assert second.returncode == 75, second.stdout + second.stderr
    finally:
        first.kill()
        first.wait()


def _no_writable_run_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine whose /run/lock this user cannot write (root-only, 0755): the lock folder falls back."""
    import tempfile

    import redfirst.leases.backends.local.slot_locks as local
    monkeypatch.delenv("REDFIRST_LOCK_DIR", raising=False)
    root_only, shared = tmp_path / "run-lock", tmp_path / "dev-shm"
    root_only.mkdir(mode=0o755)
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(local, "LOCK_BASES", (root_only, shared), raising=False)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **kw: False if str(p) == "/run/lock" else real_access(p, m, **kw))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return shared


def test_two_clients_with_different_tmpdirs_share_the_fallback_lock_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    shared = _no_writable_run_lock(tmp_path, monkeypatch)
    backends = []
    for name in ("a", "b"):
        (tmp_path / f"tmp-{name}").mkdir()
        monkeypatch.setenv("TMPDIR", str(tmp_path / f"tmp-{name}"))
        monkeypatch.setattr(tempfile, "tempdir", None)
        backends.append(at(tmp_path / name / "leases.db", monkeypatch))
    assert backends[0].locks == backends[1].locks == shared / "redfirst"
    held = backends[0].acquire(LeaseRequest(box="local"), 0, detached=True)
    with pytest.raises(NotGranted, match=f"held by lease {held.id}"):
        backends[1].acquire(LeaseRequest(box="local"), 0.2, detached=True)


def test_without_a_world_writable_lock_folder_the_backend_refuses_naming_why(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from redfirst.leases.model import LeaseError

    shared = _no_writable_run_lock(tmp_path, monkeypatch)
    shared.chmod(0o755)
    with pytest.raises(LeaseError, match="no machine-wide lock folder.*world-writable"):
        at(tmp_path / "a" / "leases.db", monkeypatch)


def test_a_reap_in_one_lease_file_never_stops_the_live_command_of_another_files_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # File a leased the slot before (its last lease of cpu0); file b's live lease now runs a command that holds
    # the slot's lock. That lock holder is b's, not an orphan of a's last lease: a's reap must leave it running.
    a = at(tmp_path / "a" / "leases.db", monkeypatch)
    old = a.acquire(LeaseRequest(box="local"), 0, detached=True)
    a.release(old.id, old.token)
    env = {**os.environ, "REDFIRST_LEASES_DB": str(tmp_path / "b" / "leases.db")}
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "--backend", "local", "run",
                               "--box", "local", "--ttl", "30", "--", "sh", "-c", "sleep 4; echo DONE"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stderr is not None
        assert "token" in holder.stderr.readline()         # granted by file b, the command starts
        time.sleep(1.5)                                    # it holds the slot's lock now
        assert a.status() == []
        out, err = holder.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait()
    stops = [e for e in a.audit() if e.event == "stop"]
    assert (holder.returncode, out.strip(), stops) == (0, "DONE", []), err


SPAWNS_AND_EXITS = ("import os, subprocess, time; subprocess.Popen(['sleep', '60']); "     # the child gets no lock fd
                    "print(os.getpgid(0), flush=True); time.sleep(1.5)")


def test_a_dead_holders_process_group_keeps_its_slot_from_other_lease_files_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # File b's `leases run` is SIGKILLed; its command exits and leaves a child without the slot's lock in its group.
    # b keeps the slot while that child runs (its lease's processes); file a must not grant it meanwhile.
    env = {**os.environ, "REDFIRST_LEASES_DB": str(tmp_path / "b" / "leases.db")}
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--ttl", "30", "--", sys.executable, "-c", SPAWNS_AND_EXITS],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    group = int(holder.stdout.readline())
    try:
        holder.kill()
        holder.wait()
        deadline = time.monotonic() + 30
        while _running(group):                          # the command exits; its child runs on in its group
            assert time.monotonic() < deadline
            time.sleep(0.05)
        a = at(tmp_path / "a" / "leases.db", monkeypatch)
        with pytest.raises(NotGranted, match="held by lease local.1 of lease file"):
            a.acquire(LeaseRequest(box="local"), 0.2, detached=True)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def test_an_end_that_never_commits_never_voids_the_machine_wide_claim(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A writer SIGKILLed inside its transaction (by the bench, or as a stopped writer), or a COMMIT that fails on a
    # full disk: the lease is still held in its file, so its claim must still hold the slot for other files.
    from redfirst.leases import clock

    b = at(tmp_path / "b" / "leases.db", monkeypatch)
    held = b.acquire(LeaseRequest(box="local", ttl=600), 0, detached=True)
    with pytest.raises(RuntimeError), b._tx() as conn:
        b._end(conn, conn.execute("SELECT * FROM leases WHERE id = ?", (held.id,)).fetchone(), clock.now(),
               "release", "released by its holder")
        raise RuntimeError("the transaction dies before its COMMIT")
    assert [x.id for x in b.status()] == [held.id]
    a = at(tmp_path / "a" / "leases.db", monkeypatch)
    with pytest.raises(NotGranted, match=f"held by lease {held.id} of lease file {tmp_path / 'b'}"):
        a.acquire(LeaseRequest(box="local"), 0.2, detached=True)


def test_a_private_lock_folder_needs_no_machine_folder_where_no_gpu_is_leased(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # REDFIRST_LOCK_DIR (a test's or bench's own "machine") on a machine whose lock bases are not usable: only a real
    # GPU's lock needs the machine's folder, so leasing the CPU slot or a declared box still works.
    import redfirst.leases.backends.local.slot_locks as local
    closed = tmp_path / "not-sticky"
    closed.mkdir(mode=0o755)
    monkeypatch.setattr(local, "LOCK_BASES", (closed,))
    b = at(tmp_path / "a" / "leases.db", monkeypatch)
    lease = b.acquire(LeaseRequest(box="local"), 0, detached=True)
    b.release(lease.id, lease.token)


def _symlinked(locks: Path, tmp_path: Path) -> None:
    shutil.rmtree(locks)
    (tmp_path / "elsewhere").mkdir()
    locks.symlink_to(tmp_path / "elsewhere")


def _moved(locks: Path, tmp_path: Path) -> None:
    locks.rename(tmp_path / "moved-away")


@pytest.mark.parametrize("replace", [_symlinked, _moved], ids=["removed-then-a-symlink", "moved-away"])
def test_a_lock_folder_replaced_while_held_does_not_let_a_second_command_on_the_slot(
        replace, lease_db: Path, tmp_path: Path, machine_locks: Path) -> None:
    # The machine-wide folder removed and a symlink to an empty folder put in its place, or moved away (`mv`), while
    # a leased command holds the slot's lock: its lock file is not where the folder's path leads any more.
    env = {k: v for k, v in os.environ.items() if k != "REDFIRST_LEASES_DB"}
    argv = [sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local", "--wait", "0",
            "--", "sh", "-c"]
    marker = tmp_path / "first.started"
    first = subprocess.Popen([*argv, f"touch {marker}; sleep 20"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x1")},
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first leased command never started"
            time.sleep(0.05)
        replace(machine_locks, tmp_path)
        second = subprocess.run([*argv, "echo second ran"], env={**env, "XDG_STATE_HOME": str(tmp_path / "x2")},
                                capture_output=True, text=True, timeout=60)
        assert "second ran" not in second.stdout, "two commands ran on one slot at once"
        assert second.returncode == 75, second.stdout + second.stderr
    finally:
        first.kill()
        first.wait()


def test_a_dead_holders_process_group_is_stopped_before_another_lease_file_grants_its_slot_past_its_ttl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As above, and then file b is never used again: its lease's TTL runs out. File a may grant the slot then, but
    # not beside the child that lease left running without the lock: that child is stopped first.
    env = {**os.environ, "REDFIRST_LEASES_DB": str(tmp_path / "b" / "leases.db")}
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--ttl", "2", "--", sys.executable, "-c", SPAWNS_AND_EXITS],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    group = int(holder.stdout.readline())
    try:
        holder.kill()
        holder.wait()
        time.sleep(3)       # past b's TTL
        a = at(tmp_path / "a" / "leases.db", monkeypatch)
        got = a.acquire(LeaseRequest(box="local"), 10, detached=True)
        members = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _group_of(p) == group]
        assert members == [], f"{got.id} of file a was granted while {members} of file b's lease ran on its slot"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def _group_of(proc: Path) -> int | None:
    try:
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[2]) if fields[0] not in ("Z", "X") else None


IGNORES_TERM_AND_EXITS = """
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30)"])
print(os.getpgid(0), flush=True)
time.sleep(0.5)
"""


def test_a_released_leases_process_that_outlives_its_sigterm_keeps_the_slot_from_other_lease_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # File b's command exits and `leases run` releases; a child left in its group without the slot's lock ignores
    # the SIGTERM of the release, and dies only at its SIGKILL a grace later. File a waits for the slot meanwhile.
    env = {**os.environ, "REDFIRST_LEASES_DB": str(tmp_path / "b" / "leases.db")}
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--ttl", "30", "--", sys.executable, "-c", IGNORES_TERM_AND_EXITS],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    group = int(holder.stdout.readline())
    try:
        a = at(tmp_path / "a" / "leases.db", monkeypatch)
        got = a.acquire(LeaseRequest(box="local"), 20, detached=True)
        members = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _group_of(p) == group]
        assert members == [], f"{got.id} of file a was granted while {members} of file b's released lease ran"
        assert holder.wait(20) == 0
    finally:
        holder.kill()
        holder.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def test_an_expired_leases_process_that_outlives_its_sigterm_keeps_the_slot_from_other_lease_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # File b's holder is SIGKILLed after its command exited, leaving that child; past b's TTL another process of file b
    # reaps the lease (SIGTERM to the child, which ignores it; SIGKILL a grace later). File a must wait for the SIGKILL.
    b_db = tmp_path / "b" / "leases.db"
    env = {**os.environ, "REDFIRST_LEASES_DB": str(b_db)}
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--ttl", "2", "--", sys.executable, "-c", IGNORES_TERM_AND_EXITS],
                              env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    group = int(holder.stdout.readline())
    try:
        holder.kill()
        holder.wait()
        time.sleep(2.5)      # past b's TTL; nothing of file b ran meanwhile
        reaper = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "status"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert reaper.returncode == 0, reaper.stderr
        a = at(tmp_path / "a" / "leases.db", monkeypatch)
        got = a.acquire(LeaseRequest(box="local"), 20, detached=True)
        members = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _group_of(p) == group]
        assert members == [], f"{got.id} of file a was granted while {members} of file b's expired lease ran"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
