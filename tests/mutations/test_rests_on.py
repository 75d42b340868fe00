"""What a verdict rests on (issue 33): every file its runs read, wherever it lies. pytest loads
conftest.py files and its configuration above the root; a proof (`gates run --require-proven`)
and a cached result keyed on the tree under the root alone outlived an edit there. Real git
repositories in tmp folders, real `mutate` and `gates` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mutate_helpers import CALC, Snapshot, git, keep, mutate, put_back, require_git, write

# The fixture the test checks against lives in a conftest.py above the repository.
STRICT = "import pytest\n\n\n@pytest.fixture\ndef expected():\n    return 5\n"
# Weakened: the expected sum is whatever calc says, so a broken add passes.
LENIENT = "import pytest\n\n\n@pytest.fixture\ndef expected():\n    from calc import add\n\n    return add(2, 3)\n"
TEST = "from calc import add\n\n\ndef test_add(expected):\n    assert add(2, 3) == expected\n"
# With no fixture from above: calc's add as the test module finds it when the test runs.
PLAIN = "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"
# Starting a process leaves the read set unknown: the result keys on the whole tree.
SPAWNS = "\n\ndef test_spawns():\n    import subprocess, sys\n    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: str, conftest: bool = True) -> Path:
    """A repository under a folder holding pytest's ini file and a conftest.py (pytest's root
    folder is that folder); in-place mutations (a worktree has no such folder above it)."""
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outer = tmp_path / "outer"
    root = outer / "repo"
    write(outer, "pytest.ini", "[pytest]\n")
    write(outer, "strict.py", STRICT)
    write(root, "calc/__init__.py", CALC)
    write(root, "tests/test_add.py", (TEST if conftest else PLAIN) + (SPAWNS if reads == "unknown" else ""))
    write(root, "gates/add.yaml", "gate: add\ndriver: {type: pytest, run: [tests/test_add.py], timeout: 60}\n")
    write(root, "mutations/calc.yaml", 'mutation: add-minus\nmode: in-place\nfile: calc/__init__.py\n'
                                       'anchor: "return a + b"\nreplace: "return a - b"\nexpect: {red: [add]}\n')
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    if conftest:
        (outer / "conftest.py").symlink_to("strict.py")
    return root


def _run(root: Path) -> tuple[tuple[str, bool], str]:
    proc = mutate(root, "--json")
    (item,) = json.loads(proc.stdout)["items"]
    return (item["verdict"], item["cached"]), proc.stderr


def _require_proven(root: Path) -> int:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "add", "--require-proven",
                           "--root", str(root)], capture_output=True, text=True, cwd=root, timeout=300).returncode


Ran = tuple[Path, tuple[str, bool], str]


@pytest.fixture(scope="module")
def _kept() -> dict[str, tuple[Snapshot, Ran]]:
    return {}


@pytest.fixture
def ran(_kept: dict[str, tuple[Snapshot, Ran]], tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch, reads: str) -> Ran:
    """`_project(..., reads)` (with the conftest.py above it) after its first `mutate` run, with that
    run's outcome and stderr: the run is made once per `reads`, module and xdist worker, and each
    test gets the folder it left (repository, cache, the folder above), put back at its path."""
    if reads not in _kept:
        def set_up(work: Path, mp: pytest.MonkeyPatch) -> Ran:
            root = _project(work, mp, reads)
            return (root, *_run(root))

        _kept[reads] = keep(tmp_path_factory, set_up)
    kept, made = _kept[reads]
    put_back(kept, monkeypatch)
    return made


@pytest.mark.parametrize("reads", ["known", "unknown"])
def test_a_conftest_weakened_above_the_root_voids_the_proof_and_the_cached_kill(ran: Ran, reads: str):
    root, first, err = ran
    assert first == ("KILLED", False), err
    assert _require_proven(root) == 0
    (root.parent / "strict.py").write_text(LENIENT)
    # The gate is GREEN still, but the kill that proved it no longer would: stale.
    assert _require_proven(root) == 3
    again, err = _run(root)
    assert again == ("SURVIVED", False), err


@pytest.mark.parametrize("reads", ["known", "unknown"])
@pytest.mark.parametrize("edit", ["retarget", "chmod"])
def test_a_link_retargeted_or_a_mode_changed_above_the_root_reruns(ran: Ran, reads: str, edit: str):
    root, first, err = ran
    assert first == ("KILLED", False), err
    conftest = root.parent / "conftest.py"
    if edit == "retarget":      # the same bytes through another link: the key holds where it leads
        write(root.parent, "copy.py", STRICT)
        conftest.unlink()
        conftest.symlink_to("copy.py")
    else:
        os.chmod(root.parent / "strict.py", 0o755)
    again, err = _run(root)
    assert again == ("KILLED", False), err
    assert _run(root)[0] == ("KILLED", True)      # and as it is now, it is found again


# Added above the root after the proof: pytest loads it from its root folder (the ini's), though no
# run read it then (it was not there). It makes calc's add right whatever the tree says.
MENDS = ("import pytest\n\n\n@pytest.fixture(autouse=True)\ndef mended(monkeypatch):\n    import calc\n\n"
         "    monkeypatch.setattr(calc, 'add', lambda a, b: 5)\n")


@pytest.mark.parametrize("reads", ["known", "unknown"])
def test_a_conftest_added_above_the_root_voids_the_proof_and_the_cached_kill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: str):
    root = _project(tmp_path, monkeypatch, reads, conftest=False)
    first, err = _run(root)
    assert first == ("KILLED", False), err
    assert _require_proven(root) == 0
    write(root.parent, "conftest.py", MENDS)
    assert _require_proven(root) == 3
    again, err = _run(root)
    assert again == ("SURVIVED", False), err
