"""`mutate` in examples/seam kills every mutation there, exit 0, and proves the seam's
CPU G1/G2/G3 gates (the -cuda gates need a CUDA device: NO_DECISION here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, require_git

from redfirst.gates.proofs import proofs

SEAM = Path(__file__).resolve().parents[2] / "examples" / "seam"


def test_every_seam_mutation_is_killed_and_proves_the_cpu_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    top = tmp_path / "clone"
    shutil.copytree(SEAM, top / "examples" / "seam",
                    ignore=shutil.ignore_patterns(".redfirst", "__pycache__", "build"))
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "seam")
    root = top / "examples" / "seam"
    proc = mutate(root, "--json", "-n", "2", cwd=root)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert verdicts == {"n10-delete-break-call": "KILLED", "replay-segments-then-breaks": "KILLED",
                        "drop-writeback": "KILLED", "refusal-over-fires": "KILLED"}
    n10 = next(i for i in doc["items"] if i["id"] == "n10-delete-break-call")
    assert [(c["gate"], c["verdict"]) for c in n10["controls"]] == [("seam-unit", "GREEN")]
    writeback = next(i for i in doc["items"] if i["id"] == "drop-writeback")
    # G1 goes RED on the second replay (step 1), not the first.
    assert "at step 1:" in writeback["gates"][0]["reason"]
    proven = proofs(root)
    for gate in ("seam-g1-replay", "seam-g2-reachability", "seam-g3-counts", "seam-unit"):
        assert gate in proven, f"{gate} not proven"
    assert git(top, "status", "--porcelain") == ""
