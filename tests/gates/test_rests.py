"""`rests.holds` on its own: what `rests_on` recorded stands only while every file it names is as
it was: a file read outside the root (content, mode, link target) and the pytest files above the
root. Mutate's cache and the proofs also key the tree's digest (which holds `treekey.surroundings`);
these check `holds` itself, so neither check can go without a test that fails."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from redfirst.gates.reads import ReadSet, observed
from redfirst.gates.rests import holds, rests_on
from redfirst.gates.treekey import TreeState


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "outer" / "repo"
    root.mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return root


def test_a_file_read_outside_the_root_that_changed_voids_what_rests_on_it(tmp_path):
    root = _tree(tmp_path)
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    stored = rests_on(TreeState.of(root), ReadSet(frozenset({"a.py"}), outside=frozenset({str(helper)})))
    assert holds(stored, TreeState.of(root))
    os.chmod(helper, 0o755)
    assert not holds(stored, TreeState.of(root))


def test_a_pytest_file_added_above_the_root_voids_a_known_read_set(tmp_path):
    root = _tree(tmp_path)
    stored = rests_on(TreeState.of(root), ReadSet(frozenset({"a.py"})))
    assert holds(stored, TreeState.of(root))
    (root.parent / "conftest.py").write_text("import pytest\n")
    assert not holds(stored, TreeState.of(root))


def test_what_a_run_read_outside_the_root_holds_where_its_reads_under_the_root_are_unknown(tmp_path):
    # a run that started a process: its reads under the root are not known, those outside it are,
    # and they survive the record's reads.json (round 6 of issue 33)
    root = _tree(tmp_path)
    beside = tmp_path / "vendor" / "limit.py"
    beside.parent.mkdir()
    beside.write_text("N = 2\n")
    report = tmp_path / "reads.json"
    report.write_text(json.dumps({"opened": [str(root / "a.py"), str(beside)], "spawned": ["/bin/true"]}))
    found = ReadSet.from_json(json.loads(json.dumps(observed(report, root, ()).to_json())))
    assert found.unknown is not None and found.outside == {str(beside)}
    stored = rests_on(TreeState.of(root), found)
    assert holds(stored, TreeState.of(root))
    beside.write_text("N = 3\n")
    assert not holds(stored, TreeState.of(root))
