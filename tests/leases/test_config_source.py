"""`leases` reads redfirst.yaml through the shared loader: the same bounds and messages as gate
files (issue 34.2/34.3): a key twice, a document nested past the bound, invalid UTF-8 are each
exit 2 naming file:line, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _leases(root, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120, cwd=root)


@pytest.mark.parametrize(("text", "line", "says"), [
    (b"leases:\n  ttl: 30\n  ttl: 5\n", 3, "duplicate key 'ttl'"),
    (b"leases:\n  boxes:\n    b: " + b"[" * 5000 + b"]" * 5000 + b"\n", 3, "nest"),
    (b"leases:\n  ttl: 30\n  db: /tmp/caf\xe9\n", 3, "UTF-8"),
])
def test_a_bad_config_is_exit_2_naming_file_and_line(repo, lease_db, text, line, says):
    (repo / "redfirst.yaml").write_bytes(text)
    proc = _leases(repo, "status")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{repo / 'redfirst.yaml'}:{line}: " in both and says in both


@pytest.mark.parametrize("gpus", [10**12, 4097])
def test_a_declared_box_of_more_gpus_than_any_machine_is_exit_2_not_a_hang(repo, lease_db, gpus):
    """A box declared with 10**12 GPUs was a list of 10**12 slot names: `leases boxes` ran past any
    timeout, taking memory (4 GB at 10**8). The count is bounded where the config is read."""
    (repo / "redfirst.yaml").write_text(f"leases:\n  boxes:\n    big:\n      gpus: {gpus}\n")
    proc = _leases(repo, "boxes")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{repo / 'redfirst.yaml'}:3: " in both and "at most 4096" in both, both
