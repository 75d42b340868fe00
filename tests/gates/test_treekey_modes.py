"""The tree a result or a proof is keyed by holds each file's mode as well as its content
(issue 33 item 3: dropping a script's exec bit replayed a cached KILLED where a fresh run is ERROR)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from redfirst.gates.treekey import TreeState


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    root.mkdir()
    (root / "run.sh").write_text("#!/bin/sh\necho '1 passed, 0 failed'\n")
    (root / "run.sh").chmod(0o755)
    (root / "data.txt").write_text("1\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "c")
    return root


@pytest.mark.parametrize("staged", [False, True], ids=["unstaged", "staged"])
def test_an_exec_bit_dropped_changes_the_key(repo: Path, staged: bool):
    before = TreeState.of(repo)
    (repo / "run.sh").chmod(0o644)
    if staged:
        _git(repo, "add", "run.sh")
    after = TreeState.of(repo)
    assert before.content("run.sh") != after.content("run.sh")
    assert before.digest != after.digest


def test_an_exec_bit_added_to_an_ignored_file_changes_its_content_key(repo: Path):
    (repo / ".gitignore").write_text("tool\n")
    (repo / "tool").write_text("#!/bin/sh\n")
    before = TreeState.of(repo).content("tool")
    os.chmod(repo / "tool", 0o755)
    assert TreeState.of(repo).content("tool") != before


def test_the_same_mode_and_content_is_the_same_key(repo: Path):
    assert TreeState.of(repo).digest == TreeState.of(repo).digest
