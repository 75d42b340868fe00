"""pytest_warm.imported.Imported.tree_stat: every file under the root with its stat, as os.walk
reads the tree (a link to a folder listed, not entered; a file's stat through its link; version
control, caches and environments left out). Real files, links and folders in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

from redfirst.gates.drivers.pytest_warm.imported import _NOT_SOURCE, Imported


def _walked(root: Path) -> dict[str, tuple[int, int]]:
    seen = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCE]
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
    return seen


def test_the_tree_is_read_as_os_walk_reads_it(tmp_path: Path):
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "m.py").write_text("x = 1\n")
    (root / "README").write_text("r")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("h")
    (root / "src" / "__pycache__").mkdir()
    (root / "src" / "__pycache__" / "m.pyc").write_bytes(b"c")
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "f.txt").write_text("o")
    (outside / "file.txt").write_text("linked")
    (root / "linked-folder").symlink_to(outside)              # listed, never entered
    (root / "linked-file").symlink_to(outside / "file.txt")   # its target's stat
    (root / "broken").symlink_to(tmp_path / "missing")       # no stat: left out
    (root / "empty").mkdir()
    seen = Imported(root).tree_stat()
    assert seen == _walked(root)
    assert set(seen) == {str(root / "src" / "pkg" / "m.py"), str(root / "README"), str(root / "linked-file")}
    assert seen[str(root / "linked-file")][1] == len("linked")
