"""The machine-wide claim files live in a folder every user of the machine may write (like /tmp):
whatever lies at a claim's path (a FIFO, a file nested 100,000 deep, fields of the wrong type) is
read as no claim, as a torn one is (the slot's OS lock still guards a running command), never a
hang or a traceback of every later `leases acquire` on the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# A claim of another lease file, unexpired, made in this boot: only its wrong-typed fields are wrong.
FIELDS = {"db": "zzz", "db_path": "/x", "lease": "x.1", "token": "t",
          "boot": Path("/proc/sys/kernel/random/boot_id").read_text().strip(), "expires_boot": 1e12,
          "expires": 1e12, "ended": False}


def _leases(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=60, cwd=root)


def _plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path.write_text(json.dumps({**FIELDS, **json.loads(kind)}))


@pytest.mark.parametrize("kind", ["fifo", "deep", '{"holder": 5}', '{"holder": ["x", "y", "z"]}',
                                  '{"voided": [1]}', '{"procs": [["a", "b", "c", null]], "holder": [1, "b", 2]}',
                                  '{"holder": [1, 2]}', '{"holder": [1, "b", 2], "procs": 7}'])
def test_a_hostile_file_at_a_claims_path_is_no_claim(repo, lease_db, machine_locks, kind):
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor:\n      gpus: 2\n")
    first = _leases(repo, "acquire", "thor", "--gpus", "1")
    assert first.returncode == 0, first.stderr
    claims = {p.name for p in machine_locks.glob("*.claim")}
    assert claims == {"thor.gpu0.claim"}, claims
    _plant(machine_locks / "thor.gpu1.claim", kind)
    proc = _leases(repo, "acquire", "thor", "--gpus", "1")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("thor.2 "), proc.stdout
    status = _leases(repo, "status", "--json")
    assert sorted(x["slots"][0] for x in json.loads(status.stdout)["leases"]) == ["gpu0", "gpu1"]


def test_a_fifo_at_the_fences_path_is_no_hang(repo, lease_db, machine_locks):
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor:\n      gpus: 2\n")
    first = _leases(repo, "acquire", "thor", "--gpus", "1")
    assert first.returncode == 0, first.stderr
    [fences] = machine_locks.glob("fences.*.json")
    fences.unlink()
    os.mkfifo(fences)
    proc = _leases(repo, "acquire", "thor", "--gpus", "1")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("thor.2 "), proc.stdout
