"""Fixtures for the leases tests: a private lease database per test, and the loopback Slurm."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def require(what: str) -> None:
    """A missing required component FAILS under CI and skips locally."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI is set, so this is a failure, not a skip)")
    pytest.skip(what)


@pytest.fixture
def lease_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "state" / "leases.db"
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(db))
    return db


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root with a redfirst.yaml the test writes."""
    root = tmp_path / "repo"
    root.mkdir()
    return root


@pytest.fixture(scope="session")
def slurm_node() -> str:
    """The name of the idle loopback Slurm node (`.ci/slurm-up` starts it)."""
    if shutil.which("sinfo") is None:
        require("Slurm is not installed (sinfo not found); run .ci/slurm-up as root")
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T %G"], capture_output=True, text=True, timeout=20)
    if out.returncode != 0 or not out.stdout.strip():
        require(f"Slurm is not reachable: sinfo said {out.stderr.strip() or out.stdout.strip()!r}; run .ci/slurm-up")
    for line in out.stdout.splitlines():
        name, state, gres = line.split()[:3]
        if "gpu:h200" in gres and state.rstrip("*") in ("idle", "mixed", "allocated"):
            return name
    require(f"no usable node with Gres gpu:h200 in sinfo: {out.stdout.strip()!r}; run .ci/slurm-up")
    raise AssertionError("unreachable")


@pytest.fixture
def slurm_exclusive(slurm_node: str):
    """Serialise the tests that allocate the one loopback GPU, across pytest-xdist workers.

    The Slurm node is one machine-wide resource, so its lock is one machine-wide file.
    """
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "redfirst-leases-slurm-tests.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield slurm_node


@pytest.fixture
def slurm_repo(repo: Path, lease_db: Path, slurm_exclusive: str) -> Path:
    (repo / "redfirst.yaml").write_text('leases:\n  backend: slurm\n  slurm: {rest: "http://127.0.0.1:6820"}\n')
    return repo
