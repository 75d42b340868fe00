"""Workers of `mutate -n N` share one GPU: a CUDA gate run waits for the GPU's lease while
another worker holds it, instead of being NO_DECISION "box local busy" (DISCARDED). Seen on
the device machine (issue 37): fourteen workers sweeping one CUDA file of vllm.cpp on one GPU
discarded 40 of 56 mutants that way. Runs on the device machine only (a CUDA gate needs a GPU
where it runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mutations.mutate_helpers import git, require_git, write

pytestmark = pytest.mark.gpu

MUTANTS = {f"k{n}": ("calc/__init__.py", "    return 2\n", f"    return {n}\n") for n in (3, 4, 5, 6)}


def test_workers_sharing_one_gpu_queue_for_it_and_every_mutant_is_decided(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_git()
    assert shutil.which("nvidia-smi"), "this test runs on the device machine"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write(root, "calc/__init__.py", "def two():\n    return 2\n")
    # Each run holds the GPU for a second, so the four workers' runs overlap.
    write(root, "tests/test_two.py", "import time\nfrom calc import two\n\n\ndef test_two():\n"
                                      "    time.sleep(1.0)\n    assert two() == 2\n")
    write(root, "gates/two.yaml", "gate: two\nrequires: {device: cuda}\ndriver:\n  type: pytest\n"
                                  "  run: [tests/test_two.py]\n  timeout: 60\n")
    for name, (file, anchor, replace) in MUTANTS.items():
        write(root, f"mutations/{name}.yaml", json.dumps({"mutation": name, "file": file, "anchor": anchor,
                                                         "replace": replace, "expect": {"red": ["two"]}}))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two")
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(root), "-n", "4",
                           "--json", "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300)
    doc = json.loads(proc.stdout)
    got = {i["id"]: (i["verdict"], i.get("reason") or "") for i in doc["items"]}
    assert got.keys() == MUTANTS.keys(), proc.stdout + proc.stderr
    assert all(verdict == "KILLED" for verdict, _ in got.values()), (got, proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
