"""A command waiting for a lease says so (issue 37's left-over): `leases run --wait`, and a gate under `gates run
--lease-wait`, print once on stderr what they wait for and for how long, unless -q; a lease granted at once
prints no such line. Real `leases` processes over one real lease file."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def _leases(root: Path, *args: str) -> list[str]:
    exe = shutil.which("leases") or str(Path(sys.executable).with_name("leases"))
    return [exe, "--root", str(root), *args]


@contextlib.contextmanager
def _held(repo: Path, *size: str) -> Iterator[None]:
    """thor held by a `leases run` of 3 s for the body's length."""
    holder = subprocess.Popen(_leases(repo, "run", "--box", "thor", *size, "--", "sleep", "3"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 30
        while "thor" not in subprocess.run(_leases(repo, "status"), capture_output=True, text=True).stdout:
            assert time.monotonic() < end and holder.poll() is None, "the holder never got its lease"
            time.sleep(0.05)
        yield
    finally:
        holder.wait(30)


def test_a_run_that_waits_for_its_lease_says_what_it_waits_for(repo: Path, lease_db: Path) -> None:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
    with _held(repo, "--gpus", "1"):
        waiter = subprocess.run(_leases(repo, "run", "--box", "thor", "--gpus", "1", "--wait", "60", "--", "true"),
                                capture_output=True, text=True, timeout=90)
    at_once = subprocess.run(_leases(repo, "run", "--box", "thor", "--gpus", "1", "--wait", "60", "--", "true"),
                             capture_output=True, text=True, timeout=90)
    assert waiter.returncode == 0, waiter.stderr
    said = [line for line in waiter.stderr.splitlines() if "waiting" in line]
    assert len(said) == 1 and "thor" in said[0] and "60s" in said[0], waiter.stderr
    assert at_once.returncode == 0 and "waiting" not in at_once.stderr, at_once.stderr  # granted at once: nothing


def test_a_gate_that_waits_for_its_lease_says_which_gate_waits(repo: Path, lease_db: Path) -> None:
    (repo / "redfirst.yaml").write_text("gates: {paths: [gates]}\nleases:\n  boxes:\n    thor: {gpus: 1}\n")
    (repo / "gates").mkdir()
    (repo / "gates" / "k.yaml").write_text("gate: k\ndriver:\n  type: pytest\n  run: [test_k.py]\n  timeout: 60\n")
    (repo / "test_k.py").write_text("def test_k():\n    assert 1 + 1 == 2\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=r@x", "-c", "user.name=r", "commit", "-qm", "k"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    with _held(repo, "--whole-box"):
        gates = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
        run = subprocess.run([gates, "run", "--root", str(repo), "--lease", "thor", "--lease-wait", "60"],
                             cwd=repo, capture_output=True, text=True, timeout=120)
    said = [line for line in run.stderr.splitlines() if "waiting" in line]
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(said) == 1 and "thor" in said[0] and "gate k" in said[0], run.stderr
