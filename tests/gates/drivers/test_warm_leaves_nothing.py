"""A `pytest-warm` gate run leaves nothing in the temporary folder once `gates run` or `mutate`
has ended: the warm process's socket folder goes with it. Seen on a busy machine: thousands of
`rf-warm-*` folders, one per run, left in /tmp."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_warm_gate_runs_and_mutate_leave_no_folder_in_the_temporary_folder(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "gates").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (root / "src.py").write_text("ONE = 1\n")
    (root / "tests" / "test_one.py").write_text("from src import ONE\n\n\ndef test_one():\n    assert ONE + 1 == 2\n")
    (root / "mutations").mkdir()
    (root / "mutations" / "two.yaml").write_text("mutation: two\nfile: src.py\nanchor: 'ONE = 1'\nreplace: 'ONE = 2'\n"
                                                 "expect: {red: [one]}\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    (root / "gates" / "one.yaml").write_text("gate: one\ndriver:\n  type: pytest-warm\n  run: [tests/test_one.py]\n"
                                             "  timeout: 60\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=r@x", "-c", "user.name=r", "commit", "-qm", "one"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "-q", "--root", str(root)],
                          cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GREEN" in proc.stdout, proc.stdout
    assert sorted(p.name for p in temp.iterdir()) == [], "left behind in TMPDIR by gates run"
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(root), "--no-cache"],
                          cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0 and "KILLED" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert sorted(p.name for p in temp.iterdir()) == [], "left behind in TMPDIR by mutate"
