"""The selftest's mutations (selftest/mutations) still find their anchors in the engine's source:
an edit to an anchored line otherwise surfaces only in `.ci/run`'s selftest, as an ERROR after the
whole suite (it did twice)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_selftest_mutation_finds_its_anchor():
    proc = subprocess.run(["mutate", "check", "--root", str(REPO)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "anchor not found" not in proc.stdout + proc.stderr
