"""The machine-wide lock folder is the same for every user of the machine (issue #12): real processes of other
users (root only: the test runs them with setpriv), one shared lock folder, each user's own lease file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY, DAEMON, NO_NAME = 65534, 1, 65533      # a user with a name, another, and a uid no passwd entry names


def _python_for(uid: int) -> list[str] | None:
    """An interpreter `uid` can run that imports this checkout and its dependencies, or None."""
    top = str(Path(__file__).resolve().parents[2])
    site = os.pathsep.join({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for exe in (os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        probe = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "env",
                                f"PYTHONPATH={top}{os.pathsep}{site}", exe, "-c", "import redfirst.leases.cli, yaml"],
                               capture_output=True, timeout=60, check=False)
        if probe.returncode == 0:
            return [exe]
    return None


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder every user can reach, holding the machine-wide lock folder (sticky, world-writable, root's)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running processes of other users needs root and setpriv")
    top = Path(tempfile.mkdtemp(prefix="rf-users-"))
    top.chmod(0o755)
    locks = top / "locks"
    locks.mkdir()
    locks.chmod(0o1777)
    monkeypatch.setenv("REDFIRST_LOCK_DIR", str(locks))
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def leases_as(uid: int, top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    python = _python_for(uid)
    if python is None:
        pytest.skip(f"no interpreter uid {uid} can run imports this checkout")
    home = top / f"home-{uid}"
    home.mkdir(exist_ok=True)
    os.chown(home, uid, uid)
    repo = Path(__file__).resolve().parents[2]
    site = os.pathsep.join({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "REDFIRST_LOCK_DIR": str(top / "locks"),
           "REDFIRST_LEASES_DB": str(home / "leases.db"), "PYTHONPATH": f"{repo}{os.pathsep}{site}"}
    out = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "env", "-i",
                          *(f"{k}={v}" for k, v in env.items()), *python, "-m", "redfirst.leases.cli", "--root", str(home),
                          *args], capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in out.stderr, out.stderr
    return out


def test_a_user_without_a_name_leases_naming_its_uid(shared: Path) -> None:
    # A container run with `--user 65533`: no passwd entry, no USER or LOGNAME.
    out = leases_as(NO_NAME, shared, "acquire", "local", "--ttl", "5")
    assert out.returncode == 0, out.stderr
    status = leases_as(NO_NAME, shared, "status")
    assert f"uid {NO_NAME}@" in status.stdout, status.stdout


def test_a_slot_one_user_leased_is_leased_by_another_once_it_is_free(shared: Path) -> None:
    # The first user's claim, lock and writer lock are that user's files in a sticky folder: the next user must
    # still be able to claim the slot once it is free, and see it busy while it is held.
    held = leases_as(NOBODY, shared, "acquire", "local", "--ttl", "30")
    assert held.returncode == 0, held.stderr
    busy = leases_as(DAEMON, shared, "acquire", "local", "--ttl", "30", "--wait", "0.2")
    assert busy.returncode == 75 and "held by lease" in busy.stderr, busy.stderr
    lease_id, token = held.stdout.split()
    assert leases_as(NOBODY, shared, "release", lease_id, "--token", token).returncode == 0
    got = leases_as(DAEMON, shared, "acquire", "local", "--ttl", "30")
    assert got.returncode == 0, got.stderr
    again = leases_as(NOBODY, shared, "acquire", "local", "--ttl", "30", "--wait", "0.2")
    assert again.returncode == 75 and "held by lease" in again.stderr, again.stderr
    assert not list((shared / "locks").glob("*.tmp"))


def test_a_lock_folder_made_again_by_one_user_is_usable_by_every_user(shared: Path) -> None:
    shutil.rmtree(shared / "locks")
    shared.chmod(0o1777)        # as /run/lock: anyone may make the folder again
    old = os.umask(0o022)
    try:
        assert leases_as(NOBODY, shared, "acquire", "local", "--ttl", "0.2").returncode == 0
    finally:
        os.umask(old)
    got = leases_as(DAEMON, shared, "acquire", "local", "--ttl", "30", "--wait", "1")
    assert got.returncode == 0, got.stderr
