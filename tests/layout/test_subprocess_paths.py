"""A child process redfirst starts with `-c` code that imports redfirst finds the very redfirst its
parent imported, wherever that came from (issue 32: the path handed over is the folder that holds
the `redfirst` package, never the package folder itself, which would put `gates`, `leases`... on
the child's path as top-level names)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# In an interpreter with no redfirst installed, redfirst comes from the checkout alone.
PROBE = textwrap.dedent("""
    import json, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    import redfirst.leases.detect as detect
    seen = []
    real = subprocess.run
    def run(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append({"rc": out.returncode, "stderr": out.stderr[-300:]})
        return out
    detect.subprocess.run = run
    detect._detect_in_child()
    print(json.dumps(seen))
""")


def test_the_gpu_detection_child_imports_the_parents_redfirst(tmp_path: Path):
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    python = tmp_path / "bare" / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import redfirst"], capture_output=True, cwd=tmp_path).returncode == 1
    out = subprocess.run([str(python), "-c", PROBE, str(REPO)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "0"})
    assert out.returncode == 0, out.stderr
    import json
    (child,) = json.loads(out.stdout.strip().splitlines()[-1])
    assert child["rc"] == 0, child["stderr"]


@pytest.mark.parametrize("part, command", [("gates", "gates"), ("mutations", "mutate"), ("leases", "leases"),
                                           ("checkers", "checkers")])
def test_each_part_runs_as_a_module_as_its_command_does(part: str, command: str, tmp_path: Path):
    out = subprocess.run([sys.executable, "-m", f"redfirst.{part}", "--help"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and f"usage: {command}" in out.stdout, out.stdout + out.stderr
