"""A mutation counts only where a run it was graded on read its file (issue 33 round 5): a worker
whose tests import or open the user's own copy of the file (an absolute PYTHONPATH into the user's
tree, a data path the environment names) graded the untouched file, so its GREEN says nothing of
the mutation. Real git, real pytest through the installed `mutate`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.mutations.mutate_helpers import git, mutate, require_git, write

CALC = "def add(a, b):\n    return a + b\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_DATA = ("import os\n\n\ndef test_data():\n"
             "    assert open(os.environ['N_FILE']).read().strip() == '2'\n")


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str],
             mutation: tuple[str, str, str]) -> Path:
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    for rel, text in files.items():
        write(root, rel, text)
    write(root, "gates/g.yaml", "gate: g\ndriver:\n  type: pytest\n  run: [tests]\n  timeout: 60\n")
    file, anchor, replace = mutation
    write(root, "mutations/m.yaml", json.dumps({"mutation": "m", "file": file, "anchor": anchor,
                                                "replace": replace, "expect": {"red": ["g"]}}))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    return root


def _outcome(root: Path) -> tuple[str, str]:
    proc = mutate(root, "-n", "1", "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    return item["verdict"], item["reason"]


@pytest.mark.parametrize("case", ["pythonpath-into-the-users-tree", "data-path-into-the-users-tree"])
def test_a_mutation_the_graded_runs_never_read_is_not_a_survivor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  case: str) -> None:
    if case == "pythonpath-into-the-users-tree":
        root = _project(tmp_path, monkeypatch, {"src/calc/__init__.py": CALC, "tests/test_add.py": TEST_ADD},
                        ("src/calc/__init__.py", "a + b", "a - b"))
        monkeypatch.setenv("PYTHONPATH", str(root / "src"))
        file = "src/calc/__init__.py"
    else:
        root = _project(tmp_path, monkeypatch, {"data/n.txt": "2\n", "tests/test_data.py": TEST_DATA},
                        ("data/n.txt", "2", "3"))
        monkeypatch.setenv("N_FILE", str(root / "data" / "n.txt"))
        file = "data/n.txt"
    verdict, reason = _outcome(root)
    # the worker's tests read the user's untouched file: GREEN there is no survival of the mutation
    assert verdict == "DISCARDED", (verdict, reason)
    assert f"never read {file}" in reason and str(root / file) in reason, reason


def test_a_mutation_whose_runs_import_another_copy_and_read_its_own_as_text_is_not_a_survivor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a source check opens the worker's file as text; the code the tests ran is the user's copy
    lint = "def test_source():\n    assert 'def add' in open('src/calc/__init__.py').read()\n"
    root = _project(tmp_path, monkeypatch, {"src/calc/__init__.py": CALC, "tests/test_add.py": TEST_ADD,
                                            "tests/test_source.py": lint}, ("src/calc/__init__.py", "a + b", "a - b"))
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    verdict, reason = _outcome(root)
    assert verdict == "DISCARDED" and str(root / "src/calc/__init__.py") in reason, (verdict, reason)


def test_a_mutation_the_runs_read_in_their_own_tree_still_counts(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, monkeypatch, {"calc/__init__.py": CALC, "tests/test_add.py": TEST_ADD},
                    ("calc/__init__.py", "a + b", "a - b"))
    assert _outcome(root)[0] == "KILLED"


def test_a_merged_survivor_whose_records_never_read_the_file_is_refused(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # the shard said DISCARDED "never read"; its report edited to SURVIVED: merge re-derives from
    # the sealed records, whose read sets lack the file
    root = _project(tmp_path, monkeypatch, {"src/calc/__init__.py": CALC, "tests/test_add.py": TEST_ADD},
                    ("src/calc/__init__.py", "a + b", "a - b"))
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    proc = mutate(root, "--json", "--shard", "1/1", "--no-cache")
    doc = json.loads(proc.stdout)
    assert doc["items"][0]["verdict"] == "DISCARDED", proc.stdout
    doc["items"][0]["verdict"], doc["items"][0]["cause"] = "SURVIVED", None
    doc["items"][0]["reason"] = "stayed GREEN under the mutation: g"
    artifact = tmp_path / "artifact" / "shard-1"
    artifact.mkdir(parents=True)
    (artifact / "mutate-shard.json").write_text(json.dumps(doc))
    (root / ".redfirst" / "evidence").rename(artifact / "evidence")
    merged = subprocess.run(["mutate", "merge", "--root", str(root), "--json", str(artifact.parent)], cwd=root,
                            capture_output=True, text=True, timeout=300)
    problems = " ".join(json.loads(merged.stdout)["merge"]["problems"])
    assert merged.returncode == 3 and "never read src/calc/__init__.py" in problems, merged.stdout + merged.stderr
