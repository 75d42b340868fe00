"""Adversarial review of the leases (issue #12): the slots a Slurm lease names, and a hung Slurm client."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest
from conftest import require

from leases import minislurm
from leases.backends import slurm as slurm_backend
from leases.backends.slurm import SlurmBackend
from leases.config import load
from leases.model import LeaseError, LeaseRequest


@pytest.fixture
def two_gpu_slurm(repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch):
    """A private Slurm of its own whose node has two GPU GRES slots (the session's has one)."""
    if minislurm.missing_commands() or os.geteuid() != 0:
        require("the private test Slurm needs the Slurm packages and root")
    prefix = Path(tempfile.mkdtemp(prefix=f"rf-slurm-{os.getpid()}-"))
    try:
        cluster = minislurm.up(prefix, gpus=2, rest=False)
    except minislurm.ClusterError as exc:
        require(f"the private test Slurm did not start: {exc}")
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    (repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")
    try:
        yield repo, cluster
    finally:
        minislurm.down(prefix)


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
