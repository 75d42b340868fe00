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


# issue 33: pytest reads conftest.py and its configuration above the root; the key held the tree under it only.
@pytest.mark.parametrize("name", ["conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini",
                                  "setup.cfg"])
def test_what_pytest_may_read_above_the_root_is_in_the_key(repo: Path, name: str):
    before = TreeState.of(repo)
    above = repo.parent / name
    above.write_text("x = 1\n")
    added = TreeState.of(repo)
    assert added.digest != before.digest and added.structure != before.structure
    above.write_text("x = 2\n")
    assert TreeState.of(repo).digest != added.digest
    os.chmod(above, 0o755)
    assert TreeState.of(repo).digest not in (added.digest, before.digest)


def test_a_link_above_the_root_is_keyed_by_where_it_leads(repo: Path):
    for name in ("a.py", "b.py"):
        (repo.parent / name).write_text("same\n")
    (repo.parent / "conftest.py").symlink_to("a.py")
    before = TreeState.of(repo).digest
    (repo.parent / "conftest.py").unlink()
    (repo.parent / "conftest.py").symlink_to("b.py")
    assert TreeState.of(repo).digest != before


def test_other_files_above_the_root_are_not_in_the_key(repo: Path):
    before = TreeState.of(repo).digest
    (repo.parent / "notes.txt").write_text("unrelated\n")
    assert TreeState.of(repo).digest == before


def test_a_copy_of_the_tree_keys_the_users_surroundings_above_its_top(repo: Path, tmp_path: Path):
    (repo.parent / "conftest.py").write_text("around the user's tree\n")
    copy = tmp_path / "cache" / "copy"
    _git(repo, "worktree", "add", "-q", "--detach", str(copy))
    assert TreeState.of(copy).digest != TreeState.of(repo).digest
    assert TreeState.of(copy, mirrors=(copy, repo)).digest == TreeState.of(repo).digest
