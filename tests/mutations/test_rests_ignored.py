"""What a verdict rests on includes what git ignores and the environment (helper-7 findings 1 and
7): a test that reads its expected value from an ignored file under the root, weakened after the
kill, voids the proof and the cached result, with the read set known or not; and a proof made in
one environment (PYTEST_ADDOPTS deselecting the killing test) is not one in another, and a fresh
SURVIVED of a mutation voids its old proof."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mutate_helpers import CALC, git, mutate, require_git, write

TEST = '''
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from calc import add
from expected_local import EXPECTED


def test_add():
    assert add(2, 3) == EXPECTED
'''
SPAWNS = "\n\ndef test_spawns():\n    import subprocess\n    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, test: str, ignored: bool = True) -> Path:
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write(root, "calc/__init__.py", CALC)
    write(root, "tests/test_add.py", test)
    write(root, "gates/add.yaml", "gate: add\ndriver: {type: pytest, run: [tests/test_add.py], timeout: 60}\n")
    write(root, "mutations/calc.yaml", 'mutation: add-minus\nmode: in-place\nfile: calc/__init__.py\n'
                                       'anchor: "return a + b"\nreplace: "return a - b"\nexpect: {red: [add]}\n')
    write(root, "tests/expected_local.py", "EXPECTED = 5\n")
    write(root, ".gitignore", "__pycache__/\n" + ("tests/expected_local.py\n" if ignored else ""))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


def _run(root: Path, *args: str) -> tuple[str, bool]:
    proc = mutate(root, "--json", *args)
    (item,) = json.loads(proc.stdout)["items"]
    return item["verdict"], item["cached"]


def _require_proven(root: Path) -> int:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "add", "--require-proven",
                           "--root", str(root)], capture_output=True, text=True, cwd=root, timeout=300,
                          env={**os.environ}).returncode


@pytest.mark.parametrize("reads", ["known", "unknown"])
def test_an_ignored_file_the_tests_read_weakened_voids_the_proof_and_the_cached_kill(tmp_path, monkeypatch, reads):
    root = _project(tmp_path, monkeypatch, TEST + (SPAWNS if reads == "unknown" else ""))
    assert _run(root) == ("KILLED", False)
    assert _require_proven(root) == 0
    write(root, "tests/expected_local.py", "from calc import add\n\nEXPECTED = add(2, 3)\n")
    assert _require_proven(root) == 3
    assert _run(root) == ("SURVIVED", False)


def test_a_proof_made_in_another_pytest_environment_is_not_one_here(tmp_path, monkeypatch):
    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_other():\n    pass\n"
    root = _project(tmp_path, monkeypatch, test, ignored=False)
    assert _run(root) == ("KILLED", False)
    assert _require_proven(root) == 0
    with monkeypatch.context() as m:
        m.setenv("PYTEST_ADDOPTS", "--deselect tests/test_add.py::test_add")
        assert _require_proven(root) == 3
        assert _run(root) == ("SURVIVED", False)
    # the proof was made where the mutation is killed; a SURVIVED elsewhere does not void it there
    assert _require_proven(root) == 0


def test_a_proof_made_by_mutate_holds_for_gates_run_in_the_same_shell(tmp_path, monkeypatch):
    # mutate sets PYTHONDONTWRITEBYTECODE for its own runs; a user's shell has none
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    root = _project(tmp_path, monkeypatch, TEST, ignored=False)
    assert _run(root) == ("KILLED", False)
    assert _require_proven(root) == 0
