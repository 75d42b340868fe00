"""Corpus lane: examples/vllm.cpp on the real vllm.cpp repository (the tarball under
REDFIRST_CORPUS, checked out at d85906ae): worktree mode, two workers, incremental builds.
Unset REDFIRST_CORPUS: skipped; set to a folder without the corpus: failed (a lane asked for
and not run proves nothing)."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from cpp_helpers import require_cpp
from mutate_helpers import require_git

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vllm.cpp"


def corpus_tarball() -> Path:
    root = os.environ.get("REDFIRST_CORPUS")
    if not root:
        pytest.skip("corpus lane: REDFIRST_CORPUS is not set")
    for path in (Path(root) / "vllm.cpp", Path(root)):
        if (path / "vllm.cpp.git.tar.gz").is_file():
            return path / "vllm.cpp.git.tar.gz"
    pytest.fail(f"REDFIRST_CORPUS={root}: no vllm.cpp corpus there ({root}/vllm.cpp/vllm.cpp.git.tar.gz is missing)")


def test_vllm_cpp_arena_mutations_in_worktree_mode(tmp_path: Path) -> None:
    tarball = corpus_tarball()
    require_git()
    require_cpp()
    checkout = Path(subprocess.run(["sh", str(EXAMPLE / "prepare.sh"), str(tarball), str(tmp_path / "work")],
                                   check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    log = tmp_path / "compiles.log"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CXX": str(EXAMPLE / "count-cxx.sh"),
           "REDFIRST_COMPILE_LOG": str(log)}
    proc = subprocess.run(["mutate", "--root", str(checkout), "--jobs", "2", "--no-cache", "--json"], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=900)
    items = {i["id"]: i for i in json.loads(proc.stdout)["items"]}
    assert {k: i["verdict"] for k, i in items.items()} == {
        "arena-reset-stale": "KILLED", "arena-no-capacity-refusal": "KILLED",
        "arena-size-from-numel": "SURVIVED",          # the gap in vllm.cpp's tests (README)
        "arena-used-renamed": "KILLED", "scratch-retires-null": "KILLED"}, proc.stderr
    assert proc.returncode == 1, proc.stderr         # a survivor is a finding
    assert "test_arena.cpp:21:" in items["arena-used-renamed"]["reason"] and \
        "error:" in items["arena-used-renamed"]["reason"], items["arena-used-renamed"]["reason"]
    compiled = Counter(line.rsplit(" ", 1)[1] for line in log.read_text().splitlines())
    # What no mutation touches is compiled once in the whole run, by the baseline: the second
    # worker is seeded with its build directory, and each mutation rebuilds only what changed.
    for untouched in ("tests/doctest_main.cpp", "src/vt/tensor.cpp", "src/vt/dtype.cpp", "src/vt/backend.cpp",
                      "src/vt/cpu/cpu_backend.cpp"):
        assert compiled[untouched] == 1, compiled
    assert sum(compiled.values()) <= 8 + 2 * len(items), compiled
    # The user's checkout is untouched.
    assert subprocess.run(["git", "status", "--porcelain"], cwd=checkout, capture_output=True,
                          text=True).stdout == ""
