"""Adversarial review of the leases (issue #12): the slots a Slurm lease names, and a hung Slurm client."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from redfirst.leases import minislurm
from redfirst.leases.backends import slurm as slurm_backend
from redfirst.leases.backends.slurm import SlurmBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseError, LeaseRequest


@pytest.fixture
def two_gpu_slurm(repo: Path, lease_db: Path, slurm_two_gpus: minislurm.Cluster):
    """A repository leasing from a private Slurm of its own whose node has two GPU GRES slots."""
    (repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")
    return repo, slurm_two_gpus


def test_two_slurm_leases_of_one_gpu_each_name_the_gpus_slurm_gave_not_both_gpu0(two_gpu_slurm) -> None:
    repo, _ = two_gpu_slurm
    b = SlurmBackend(load(repo))
    first = b.acquire(LeaseRequest(select="gpu_model=h200", gpus=1, ttl=30, max_runtime=120), 30, detached=True)
    second = b.acquire(LeaseRequest(select="gpu_model=h200", gpus=1, ttl=30, max_runtime=120), 30, detached=True)
    try:
        assert first.box == second.box
        # Two live holders of one box: their slots must not overlap, as Slurm's own IDX says they do not.
        assert set(first.slots).isdisjoint(second.slots), (first.slots, second.slots)
        assert sorted(first.slots + second.slots) == ["gpu0", "gpu1"]
    finally:
        b.release(first.id, first.token)
        b.release(second.id, second.token)


def test_a_hung_slurm_controller_is_a_lease_error_not_a_timeout_traceback(
        slurm_repo: Path, slurm_cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    (slurm_repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")     # the CLI path: sinfo
    monkeypatch.setattr(slurm_backend, "CLI_TIMEOUT_S", 1.0)
    ctld = int((slurm_cluster.prefix / "run" / "slurmctld.pid").read_text())
    os.kill(ctld, signal.SIGSTOP)      # sinfo connects and waits for an answer that does not come
    try:
        with pytest.raises(LeaseError, match="did not answer"):
            SlurmBackend(load(slurm_repo)).boxes()
    finally:
        os.kill(ctld, signal.SIGCONT)


def _cuda_gate_repo(root: Path) -> Path:
    import subprocess

    (root / "gates").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "tests" / "test_k.py").write_text("def test_k():\n    assert True\n")
    (root / "gates" / "k.yaml").write_text("gate: k\nrequires: {device: cuda}\ndriver:\n  type: pytest\n"
                                           "  run: [tests/test_k.py]\n  timeout: 60\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=r@x", "-c", "user.name=r", "commit", "-qm", "k"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    return root


def _gates_run(root: Path, env: dict[str, str]) -> dict:
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--json", "-q", "--root", str(root)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)["items"][0]


@pytest.mark.parametrize("env", [
    {"REDFIRST_LEASE_ID": "local.1"},                                           # a stray variable, no lease at all
    {"REDFIRST_LEASE_ID": "local.1", "REDFIRST_LEASE_TOKEN": "local:local:0:1"},  # a forged token
])
def test_a_lease_variable_without_a_live_lease_never_runs_a_cuda_gate_unleased(
        repo: Path, lease_db: Path, env: dict[str, str]) -> None:
    # This machine has no GPU: leased honestly, a CUDA gate is NO_DECISION (box local lacks gpus>=1).
    root = _cuda_gate_repo(repo)
    honest = _gates_run(root, {})
    assert honest["verdict"] == "NO_DECISION", honest
    fooled = _gates_run(root, env)
    assert fooled["verdict"] == "NO_DECISION", fooled


@pytest.mark.parametrize("fault", ["folder", "corrupt"])
def test_a_slurm_lease_with_a_broken_audit_file_is_an_exit_code_not_a_traceback(
        slurm_repo: Path, lease_db: Path, fault: str) -> None:
    import subprocess
    import sys

    lease_db.parent.mkdir(parents=True, exist_ok=True)
    if fault == "folder":
        lease_db.mkdir()                                   # a folder where the audit file should be
    else:
        lease_db.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))    # corrupt pages
    proc = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(slurm_repo), "run", "--select",
                           "gpu_model=h200", "--wait", "60", "--", "true"], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 2), proc.stderr
    jobs = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True).stdout
    assert "leases:" not in jobs, jobs                     # no allocation left behind by the fault


def test_a_cuda_gate_inside_a_cpu_only_lease_takes_no_gpu_it_does_not_hold(repo: Path, lease_db: Path) -> None:
    import json
    import subprocess
    import sys

    root = _cuda_gate_repo(repo)
    # A real, live lease of the CPU slot encloses the gate: it holds no GPU, so the gate has none to run on.
    proc = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(root), "run", "--box", "local", "--gpus", "0", "--",
                           sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--json", "-q", "--root", str(root)],
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "NO_DECISION", item


STEPPED_ACQUIRE = """
import sys, time
real = time.time
time.time = lambda: real() + 3600      # this process's wall clock stepped an hour ahead (an NTP step, a bad RTC)
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseRequest, NotGranted
b = LocalBackend(LeasesConfig())
try:
    b.acquire(LeaseRequest(box="local", ttl=30), 2)
except NotGranted:
    b.status()                          # a reap of every box of its lease file, orphans too
    sys.exit(75)
sys.exit(0)
"""


@pytest.mark.parametrize("files", ["one-lease-file", "two-lease-files"])
def test_a_wall_clock_step_never_ends_a_live_holders_lease(files: str, lease_db: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys
    import time

    from redfirst.leases.backends.local import LocalBackend
    from redfirst.leases.config import LeasesConfig

    env = dict(os.environ)
    if files == "two-lease-files":
        # The stepped process judges the holder's machine-wide claim, from a file that leased the slot before.
        env["REDFIRST_LEASES_DB"] = str(tmp_path / "other" / "leases.db")
        monkeypatch.setenv("REDFIRST_LEASES_DB", env["REDFIRST_LEASES_DB"])
        other = LocalBackend(LeasesConfig())
        before = other.acquire(LeaseRequest(box="local"), 0, detached=True)
        other.release(before.id, before.token)
        monkeypatch.setenv("REDFIRST_LEASES_DB", str(lease_db))
    # The holder's command runs until the test tells it to end (a line on its stdin), after the stepped
    # process gave up: live all along, however slow the machine, and never held longer than that.
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "--backend", "local",
                               "run", "--box", "local", "--ttl", "30", "--", "sh", "-c", "read go; echo DONE"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert holder.stderr is not None
    assert "token" in holder.stderr.readline()             # granted, the command runs
    time.sleep(0.5)
    stepped = subprocess.run([sys.executable, "-c", STEPPED_ACQUIRE], capture_output=True, text=True, timeout=60,
                             env=env)
    assert holder.poll() is None, "the holder ended before the stepped process judged its lease"
    out, err = holder.communicate("go\n", timeout=60)
    assert (holder.returncode, out.strip()) == (0, "DONE"), err
    assert stepped.returncode == 75, stepped.stderr        # the live holder's slot is not granted again
