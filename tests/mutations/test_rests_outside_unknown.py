"""A result rests on the files its runs read outside the root even where what they read under the
root is not known: a test that starts a process, or a gate with a build step (the read set is
UNKNOWN, the whole tree stands for it), still imported a module from a folder beside the project,
and a cached SURVIVED must not outlive an edit of that module (round 6 of issue 33)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import git, make_repo, mutate, write

TEST = '''\
import subprocess
import sys

from calc import add
from limit import N


def test_add():
    if SPAWN:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert add(N, N) == 2 * N
'''


def _outcome(repo: Path) -> tuple[str, bool]:
    proc = mutate(repo, "--json")
    (item,) = json.loads(proc.stdout)["items"]
    return item["verdict"], bool(item.get("cached"))


# the gate (make_repo's `compiles` runs tests/test_add.py after a build step), and whether the test starts a process
@pytest.mark.parametrize(("gate", "spawn"), [("add", True), ("compiles", False)], ids=["spawned", "built"])
def test_a_module_read_outside_the_root_by_runs_whose_tree_reads_are_unknown_changed_is_no_cache_hit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: str, spawn: bool) -> None:
    repo = make_repo(tmp_path, monkeypatch)
    vendor = tmp_path / "vendor"
    write(vendor, "limit.py", "N = 2\n")
    monkeypatch.setenv("PYTHONPATH", str(vendor))
    write(repo, "tests/test_add.py", f"SPAWN = {spawn}\n" + TEST)
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    f"replace: 'return a * b'\nexpect: {{red: [{gate}]}}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a test that reads a module beside the project and starts a process")
    assert _outcome(repo) == ("SURVIVED", False)      # 2 * 2 == 2 + 2
    assert _outcome(repo) == ("SURVIVED", True)       # nothing changed: a hit
    write(vendor, "limit.py", "N = 3\n")               # 3 * 3 != 3 + 3: a fresh run kills it
    assert _outcome(repo) == ("KILLED", False)


def test_a_proof_stored_by_merge_rests_on_what_its_records_read_outside_the_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    repo = make_repo(tmp_path, monkeypatch)
    vendor = tmp_path / "vendor"
    write(vendor, "limit.py", "N = 3\n")
    monkeypatch.setenv("PYTHONPATH", str(vendor))
    write(repo, "tests/test_add.py", "SPAWN = False\n" + TEST)
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a * b'\nexpect: {red: [add]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a test that reads a module beside the project")
    shard = mutate(repo, "--json", "--shard", "1/1", "--no-cache")
    (tmp_path / "shard.json").write_text(shard.stdout)
    merged = subprocess.run(["mutate", "merge", "--root", str(repo), str(tmp_path / "shard.json")], cwd=repo,
                            capture_output=True, text=True, timeout=300)
    assert merged.returncode == 0 and "not stored" not in merged.stderr, merged.stdout + merged.stderr

    def proven() -> int:
        return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "add", "--require-proven",
                               "--root", str(repo)], capture_output=True, text=True, timeout=300).returncode

    assert proven() == 0                       # 3 * 3 != 3 + 3: the merged kill proves the gate
    write(vendor, "limit.py", "N = 2\n")       # 2 * 2 == 2 + 2: the mutation now survives
    assert proven() != 0
