"""Faults of the lease file and lock folder are exit codes with a message, never a traceback (issue #12).

Real SQLite files, a real small tmpfs for disk full and a read-only remount (root only), real
`leases` processes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def leases(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "REDFIRST_LEASES_DB": str(db), **(env or {})}
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(db.parent), *args], env=e,
                          capture_output=True, text=True, timeout=120)


def clean(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr + out.stdout, out.stderr


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_corrupt_lease_file_is_exit_2_naming_it(lease_db: Path) -> None:
    lease_db.parent.mkdir(parents=True)
    lease_db.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    for cmd in (["status"], ["audit"], ["run", "--box", "local", "--", "true"]):
        out = leases(lease_db, *cmd)
        clean(out)
        assert out.returncode == 2 and str(lease_db) in out.stderr, (cmd, out.stderr)


def test_a_folder_where_the_lease_file_should_be_is_exit_2_naming_it(lease_db: Path) -> None:
    lease_db.mkdir(parents=True)
    for cmd in (["status"], ["acquire", "local"]):
        out = leases(lease_db, *cmd)
        clean(out)
        assert out.returncode == 2 and str(lease_db) in out.stderr, (cmd, out.stderr)


def test_a_full_disk_is_exit_2_naming_the_lease_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "256k") as small:
        db = small / "leases.db"
        assert leases(db, "status").returncode == 0
        fd = os.open(small / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
        os.close(fd)
        for cmd in (["run", "--box", "local", "--", "true"], ["acquire", "local"]):
            out = leases(db, *cmd)
            clean(out)
            assert out.returncode == 2 and ("full" in out.stderr or "space" in out.stderr), (cmd, out.stderr)


def test_status_and_audit_work_on_a_read_only_lease_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "4m") as ro:
        db = ro / "leases.db"
        granted = leases(db, "acquire", "local", "--ttl", "600")
        assert granted.returncode == 0, granted.stderr
        lease_id = granted.stdout.split()[0]
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        status = leases(db, "status")
        clean(status)
        assert status.returncode == 0 and lease_id in status.stdout, status.stderr
        audit = leases(db, "audit")
        clean(audit)
        assert audit.returncode == 0 and "grant" in audit.stdout, audit.stderr
        out = leases(db, "acquire", "local")      # a write on a read-only file: a message, exit 2
        clean(out)
        assert out.returncode == 2 and "read-only" in out.stderr, out.stderr


def test_a_lock_folder_removed_while_held_does_not_fail_a_command_that_succeeded(lease_db: Path) -> None:
    locks = Path(os.environ["REDFIRST_LOCK_DIR"])
    out = leases(lease_db, "run", "--box", "local", "--ttl", "3", "--", "sh", "-c",
                 f"rm -rf {locks}; sleep 1.5; echo done")
    clean(out)
    assert out.returncode == 0 and "done" in out.stdout, out.stderr
    audit = leases(lease_db, "audit")
    clean(audit)
    assert audit.returncode == 0 and "release" in audit.stdout, audit.stdout + audit.stderr


def test_a_disk_that_fills_while_held_does_not_fail_a_command_that_succeeded(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "512k") as small:
        db = small / "leases.db"
        out = leases(db, "run", "--box", "local", "--ttl", "2", "--", "sh", "-c",
                     f"dd if=/dev/zero of={small}/filler bs=4k 2>/dev/null; sleep 1; echo done")
        clean(out)
        assert out.returncode == 0 and "done" in out.stdout, out.stderr
        assert "release" in out.stderr or "full" in out.stderr, out.stderr     # said, not swallowed
        (small / "filler").unlink()
        status = leases(db, "status")          # the next look reaps it by its TTL
        clean(status)
        audit = leases(db, "audit")
        clean(audit)
        assert audit.returncode == 0 and "grant" in audit.stdout, audit.stderr


GATE_FILLING_THE_DISK = """\
gate: leased
claim: a gate whose build fills the disk of the lease file
build: [sh, -c, "dd if=/dev/zero of={small}/filler bs=4k 2>/dev/null; true"]
driver:
  type: command
  run: [sh, -c, "echo ok"]
exit_only: "only the lease's faults matter here"
requires: {{device: cpu}}
"""


def test_a_disk_that_fills_under_a_leased_gate_is_no_decision_never_a_traceback_or_red(tmp_path: Path) -> None:
    # The build (run through the lease's wrapper) fills the disk: the main step's wrapper cannot record
    # its process, the runner cannot confirm the lease. Nothing ran under a confirmed lease: NO_DECISION.
    import json
    import shutil

    with tmpfs(tmp_path / "small", "512k") as small:
        root = tmp_path / "repo"
        (root / "gates").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
        (root / "gates" / "leased.yaml").write_text(GATE_FILLING_THE_DISK.format(small=small))
        exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
        out = subprocess.run([exe, "run", "--lease", "thor", "--lease-wait", "10", "--json"], cwd=root,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "REDFIRST_LEASES_DB": str(small / "leases.db")})
        clean(out)
        for stderr in (root / ".redfirst").rglob("stderr"):
            assert "Traceback" not in stderr.read_text(), stderr.read_text()
        item = json.loads(out.stdout)["items"][0]
        assert out.returncode == 3 and item["verdict"] == "NO_DECISION", out.stdout + out.stderr
        assert "full" in item["reason"], item


GATE_UNDER_A_LOCKED_SLOT = """\
gate: leased
claim: a gate whose slot another program of this machine locks between its build and its run
build: [sh, -c, "touch {marker}; sleep 1"]
driver:
  type: command
  run: [sh, -c, "exit {code}"]
exit_only: "only the lease wrapper's refusal matters here"
requires: {{device: cpu}}
"""


@pytest.mark.parametrize(("outsider", "code", "verdict"), [
    (True, 0, "NO_DECISION"),   # the wrapper refuses (exit 75): the program never ran, so no RED
    (False, 75, "RED"),         # the program itself exits 75 under a confirmed lease: its own failure
])
def test_a_lease_wrapper_that_refuses_to_run_the_command_is_no_decision_not_red(
        tmp_path: Path, outsider: bool, code: int, verdict: str) -> None:
    import fcntl
    import json
    import shutil
    import threading
    import time

    root, locks, marker = tmp_path / "repo", tmp_path / "locks", tmp_path / "built"
    (root / "gates").mkdir(parents=True)
    locks.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
    (root / "gates" / "leased.yaml").write_text(GATE_UNDER_A_LOCKED_SLOT.format(marker=marker, code=code))

    def outsider_locks_the_slot() -> None:
        # a program outside the lease takes the slot's lock as soon as the build lets go of it
        while not marker.exists():
            time.sleep(0.01)
        fd = os.open(next(locks.glob("*gpu0.lock")), os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        time.sleep(13)
        os.close(fd)

    holder = threading.Thread(target=outsider_locks_the_slot, daemon=True)
    if outsider:
        holder.start()
    exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
    out = subprocess.run([exe, "run", "--lease", "thor", "--lease-wait", "10", "--json"], cwd=root,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "REDFIRST_LEASES_DB": str(tmp_path / "leases.db"),
                              "REDFIRST_LOCK_DIR": str(locks)})
    clean(out)
    item = json.loads(out.stdout)["items"][0]
    assert item["verdict"] == verdict, out.stdout + out.stderr
    if verdict == "NO_DECISION":
        assert "refused" in item["reason"] and "did not run" in item["reason"], item


@pytest.mark.parametrize("where", ["leases.db", "state/leases.db"])
def test_read_only_commands_answer_on_a_read_only_state_folder_that_holds_no_lease_file(
        tmp_path: Path, where: str) -> None:
    # A read-only home (a CI container, a locked-down account) where nothing was ever leased: nothing is held, there
    # is nothing to audit, and the boxes are the machine's; only a write needs the file.
    with tmpfs(tmp_path / "ro", "1m") as ro:
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        db = ro / where
        for cmd, says in ((["status"], "no live leases"), (["audit"], ""), (["boxes"], "local")):
            out = leases(db, *cmd)
            clean(out)
            assert out.returncode == 0 and says in out.stdout, (cmd, out.stderr)
        out = leases(db, "acquire", "local")
        clean(out)
        assert out.returncode == 2 and str(db) in out.stderr and "read-only" in out.stderr, out.stderr
        assert not db.exists()
