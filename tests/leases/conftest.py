"""Fixtures for the leases tests: a private lease database per test, and a private loopback Slurm."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))     # test helpers beside the tests (fake_rc), as tests/mutations does


def require(what: str) -> None:
    """A missing required component FAILS under CI and skips locally."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI is set, so this is a failure, not a skip)")
    pytest.skip(what)


@pytest.fixture(autouse=True)
def machine_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The machine-wide lock folder, private to each test: tests on other workers lease `local` too.

    A real GPU's lock lives in the machine's own folder whatever REDFIRST_LOCK_DIR says; in this process
    that folder is the test's own too (`LOCK_BASES`), so the fake GPUs of test_gpu_identity never touch
    /run/lock. A subprocess on a machine with real GPUs uses the real one, as it must."""
    import redfirst.leases.backends.local.slot_locks as local
    locks = tmp_path / "machine-locks"
    monkeypatch.setenv("REDFIRST_LOCK_DIR", str(locks))
    base = tmp_path / "machine-base"
    base.mkdir(mode=0o1777)
    base.chmod(0o1777)
    monkeypatch.setattr(local, "LOCK_BASES", (base,))
    return locks


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


from redfirst.leases.minislurm import etc_digest  # noqa: E402

_ETC_SLURM_AT_START = etc_digest()     # at import: before any test of this process ran


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After the suite: no daemon of a private test Slurm is left, and /etc/slurm is as it was."""
    import tempfile

    from redfirst.leases import minislurm

    problems = []
    for prefix in Path(tempfile.gettempdir()).glob(f"rf-slurm-{os.getpid()}-*"):
        left = minislurm.running(prefix) + [f"slurmstepd {p}" for p in minislurm.steps_of(prefix)]
        if left:
            problems.append(f"{prefix}: still running {', '.join(left)}")
    if etc_digest() != _ETC_SLURM_AT_START:
        problems.append("/etc/slurm changed during the suite")
    if problems:
        print("\nleases: " + "; ".join(problems))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def etc_slurm_before() -> dict[str, str]:
    return _ETC_SLURM_AT_START


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory, etc_slurm_before: dict[str, str]):
    """A private single-node Slurm on loopback for this test session (one per pytest-xdist worker).

    Its own SLURM_CONF, munge key and socket, ports and state under a tmp folder; stopped at the
    end of the session, so no daemon of the suite is left and /etc/slurm is never read or written."""
    from redfirst.leases import minislurm

    missing = minislurm.missing_commands()
    if missing:
        require(f"Slurm/munge is not installed ({', '.join(missing)} not found); run .ci/setup as root")
    if os.geteuid() != 0:
        require("the private test Slurm needs root (slurmd runs job steps as their users)")
    try:
        with minislurm.private("s") as cluster:      # an error at teardown fails the run: no daemon may be left
            yield cluster
    except minislurm.LeftRunning:
        raise
    except minislurm.ClusterError as exc:
        require(f"the private test Slurm did not start: {exc}")


@pytest.fixture
def slurm_two_gpus() -> Iterator[Any]:
    """A private Slurm of the test's own whose node has two GPU GRES slots (the session's has one)."""
    from redfirst.leases import minislurm

    if minislurm.missing_commands() or os.geteuid() != 0:
        require("the private test Slurm needs the Slurm packages and root")
    try:
        with minislurm.private("g2", gpus=2, rest=False) as cluster:
            yield cluster
    except minislurm.LeftRunning:
        raise
    except minislurm.ClusterError as exc:
        require(f"the private test Slurm did not start: {exc}")


@pytest.fixture(scope="session")
def slurm_node(slurm_cluster) -> str:
    """The name of the idle node of the private test Slurm."""
    return str(slurm_cluster.node)


@pytest.fixture
def slurm_exclusive(slurm_cluster):
    """Serialise the tests that allocate the one GPU of this session's private Slurm.

    The cluster is this worker's own, so the lock lives in its prefix."""
    import fcntl

    with open(slurm_cluster.prefix / "tests.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield slurm_cluster.node


@pytest.fixture
def slurm_repo(repo: Path, lease_db: Path, slurm_exclusive: str, slurm_cluster) -> Path:
    rest = slurm_cluster.rest or "http://127.0.0.1:9"
    (repo / "redfirst.yaml").write_text(f'leases:\n  backend: slurm\n  slurm: {{rest: "{rest}"}}\n')
    return repo
