"""One contract, three backends: local (this machine), slurm (the private test Slurm of
`redfirst/leases/minislurm.py`) and rc (a FAKE resource-controller over real HTTP on loopback, `fake_rc`).

Each backend owns how a command runs on its box and what identity the box has (issue #13 item 3):
`redfirst/gates/leasing.py` asks the Backend Protocol and names no backend.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_rc import TOKEN, serve

import redfirst.gates.leasing
from redfirst.gates.model import DriverSpec, Gate, Requires, Source
from redfirst.leases import procs
from redfirst.leases.backends import Backend, open_backend
from redfirst.leases.config import load
from redfirst.leases.model import Box, LeaseRequest, NotGranted, StaleLease, Unsatisfiable

KINDS = ["local", "slurm", "rc"]


@dataclass(frozen=True)
class Subject:
    backend: Backend
    box: str
    root: Path


@pytest.fixture(params=KINDS)
def subject(request: pytest.FixtureRequest, repo: Path, lease_db: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Subject]:
    kind = request.param
    if kind == "local":
        (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    one: {gpus: 1, labels: {gpu_model: h200}}\n")
        yield Subject(open_backend(load(repo)), "one", repo)
    elif kind == "slurm":
        root = request.getfixturevalue("slurm_repo")
        yield Subject(open_backend(load(root)), request.getfixturevalue("slurm_exclusive"), root)
    else:
        with serve() as (url, _rc):
            monkeypatch.setenv("RC_TOKEN", TOKEN)
            (repo / "redfirst.yaml").write_text(f"leases:\n  backend: rc\n  rc: {{url: '{url}', submitter: ci}}\n")
            yield Subject(open_backend(load(repo)), "thor:gpu0", repo)


def _box(s: Subject) -> Box:
    return next(b for b in s.backend.boxes() if b.name == s.box)


def test_every_box_is_this_backends_with_slots(subject: Subject) -> None:
    boxes = subject.backend.boxes()
    assert boxes and all(b.backend == subject.backend.name and b.slots for b in boxes)
    assert len({b.name for b in boxes}) == len(boxes)


def test_a_lease_renews_until_released_and_then_its_token_is_stale(subject: Subject) -> None:
    b = subject.backend
    lease = b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300, purpose="contract"), 30)
    assert lease.backend == b.name and lease.box == subject.box and lease.token
    assert b.renew(lease.id, lease.token).id == lease.id
    b.release(lease.id, lease.token)
    with pytest.raises(StaleLease):
        b.renew(lease.id, lease.token)
    with pytest.raises(StaleLease):
        b.release(lease.id, lease.token)


def test_a_held_box_is_not_granted_twice(subject: Subject) -> None:
    b = subject.backend
    lease = b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300), 30)
    try:
        with pytest.raises(NotGranted):
            b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300), 0)
    finally:
        b.release(lease.id, lease.token)


def test_a_command_runs_on_the_leased_box_through_the_backend_or_is_refused_naming_why(subject: Subject) -> None:
    b = subject.backend
    lease = b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300), 30)
    try:
        why = b.why_cannot_run()
        if why is None:
            out = subprocess.run([*b.run_prefix(lease), "sh", "-c", 'echo "token=$REDFIRST_LEASE_TOKEN"; exit 3'],
                                 env={**os.environ, **b.env(lease)}, capture_output=True, text=True, timeout=120)
            assert out.returncode == 3, out.stderr
            assert f"token={lease.token}" in out.stdout
        else:
            assert why.strip()
            with pytest.raises(Unsatisfiable, match=re.escape(why)):
                b.run_prefix(lease)
    finally:
        b.release(lease.id, lease.token)


INSIDE = ("import json, sys; from pathlib import Path; from redfirst.leases.backends import open_backend; "
          "from redfirst.leases.config import load; b = open_backend(load(Path(sys.argv[1])), sys.argv[2]); "
          "print(json.dumps(b.why_not_inside(sys.argv[3])))")


def test_only_the_leases_own_commands_run_inside_it(subject: Subject) -> None:
    """The lease's variables alone put no process inside it: its command is inside, this test process is not."""
    import json
    import sys

    b = subject.backend
    lease = b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300), 30, detached=True)
    try:
        outside = b.why_not_inside(lease.id)
        assert outside is not None and lease.id in outside, outside
        if b.why_cannot_run() is None:
            out = subprocess.run([*b.run_prefix(lease), sys.executable, "-c", INSIDE, str(subject.root), b.name,
                                  lease.id], env={**os.environ, **b.env(lease)}, capture_output=True, text=True,
                                 timeout=120)
            assert out.returncode == 0 and json.loads(out.stdout) is None, out.stdout + out.stderr
    finally:
        b.release(lease.id, lease.token)


def test_the_identity_is_the_boxs_own_answer(subject: Subject) -> None:
    b = subject.backend
    lease = b.acquire(LeaseRequest(box=subject.box, gpus=1, ttl=60, max_runtime=300), 30)
    try:
        ident = b.identity(lease, _box(subject))
    finally:
        b.release(lease.id, lease.token)
    assert {"boot_id", "gpus", "driver", "toolkit"} <= set(ident)
    if b.name == "rc":
        # From the controller: the device's own labels, nothing of this machine.
        assert ident["source"].startswith("resource-controller http://127.0.0.1:")
        assert ident["gpus"][0]["name"] == "h200" and ident["host"] == "thor"
        assert ident["boot_id"] != procs.boot_id()
    else:
        assert ident["boot_id"] == procs.boot_id()       # the private Slurm's node is this machine too
    if b.name == "slurm":
        assert ident["job_id"] == lease.fence


def _gate() -> Gate:
    return Gate("contract", DriverSpec("command", ("true",), timeout=30), Source(Path("gates/g.yaml"), 1),
                requires=Requires(gpus=1))


def test_a_gate_runs_under_the_backends_own_runner_and_identity(subject: Subject) -> None:
    b = subject.backend
    if b.why_cannot_run() is not None:
        with (pytest.raises(Unsatisfiable, match=re.escape(b.why_cannot_run() or "")),
              redfirst.gates.leasing.lease_for(_gate(), subject.box, 5, root=subject.root)):
            pass
        assert b.status() == [], "a refusal holds nothing"
        return
    with redfirst.gates.leasing.lease_for(_gate(), subject.box, 30, root=subject.root) as run:
        assert run.identity["backend"] == b.name and run.identity["box"] == subject.box
        assert run.identity["boot_id"] == procs.boot_id()
        out = subprocess.run([*run.run_prefix, "sh", "-c", 'echo "$REDFIRST_LEASE_ID"'],
                             env={**os.environ, **run.env}, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == run.lease_id


def test_gates_leasing_names_no_backend() -> None:
    """The gate engine asks the Protocol: no backend name, no srun, no probing for attributes."""
    code = Path(redfirst.gates.leasing.__file__).read_text()
    for word in ('"local"', "'local'", '"slurm"', "'slurm'", '"rc"', "'rc'", "srun", "getattr(", "runs_commands_here"):
        assert word not in code, f"redfirst/gates/leasing.py names {word}"


def test_the_gate_runner_names_no_leases_module() -> None:
    """The runner reaches leases through redfirst/gates/leasing.py alone (the refusal file included)."""
    import redfirst.gates.runner
    code = Path(redfirst.gates.runner.__file__).read_text()
    assert not re.search(r"^\s*(from|import) redfirst\.leases\b", code, re.M), "redfirst/gates/runner.py imports a leases module"
