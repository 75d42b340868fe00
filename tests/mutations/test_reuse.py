"""Parallel workers (one worktree each), the result cache and --changed-since."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

MUTATIONS = """\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add-warm], green: [sub-warm]}
- mutation: sub-plus
  file: calc/__init__.py
  anchor: "return a - b"
  replace: "return a + b"
  expect: {red: [sub-warm], green: [add-warm]}
- mutation: clamp-low
  file: calc/__init__.py
  anchor: "    if x < lo:\\n        return lo\\n"
  replace: ""
  expect: {red: [clamp-warm]}
- mutation: clamp-high
  file: calc/__init__.py
  anchor: "return hi"
  replace: "return x"
  expect: {red: [clamp-warm]}
"""


def warm_gates(root: Path) -> None:
    # Warm gates: these tests are about reuse, not the driver, and stay fast this way.
    for name in ("add", "sub", "clamp"):
        write(root, f"gates/{name}-warm.yaml", f"gate: {name}-warm\ndriver: {{type: pytest-warm, "
                                               f"run: [tests/test_{name}.py], preload: [calc]}}\n")


def run(root: Path, *args: str) -> tuple[int, dict, str]:
    proc = mutate(root, "--json", *args)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_two_workers_decide_like_one_and_leave_no_worktree(repo: Path):
    write(repo, "mutations/all.yaml", MUTATIONS)
    warm_gates(repo)
    status = git(repo, "status", "--porcelain")
    code, doc, err = run(repo, "-n", "2", "--no-cache")
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    # clamp-high survives: no test reaches x > hi, which is the finding mutate exists for.
    assert verdicts == {"add-minus": "KILLED", "sub-plus": "KILLED", "clamp-low": "SURVIVED",
                        "clamp-high": "SURVIVED"}, err
    assert [i["id"] for i in doc["items"]] == ["add-minus", "sub-plus", "clamp-low", "clamp-high"]
    assert code == 1
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert git(repo, "status", "--porcelain") == status


def test_cache_reuses_results_until_the_target_or_a_gate_file_changes(repo: Path):
    write(repo, "mutations/all.yaml", MUTATIONS.split("- mutation: clamp-low")[0])
    warm_gates(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mutations")
    _, first, _ = run(repo)
    assert [i["cached"] for i in first["items"]] == [False, False]
    _, second, err = run(repo)
    assert [(i["verdict"], i["cached"]) for i in second["items"]] == [("KILLED", True), ("KILLED", True)]
    assert "baseline" not in err
    write(repo, "gates/sub-warm.yaml", (repo / "gates/sub-warm.yaml").read_text() + "claim: sub subtracts\n")
    _, third, _ = run(repo)
    # Both mutations name the gate `sub` (one as control): both run again.
    assert [i["cached"] for i in third["items"]] == [False, False]
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text() + "\n# touched\n")
    _, fourth, _ = run(repo)
    assert [i["cached"] for i in fourth["items"]] == [False, False]


def test_changed_since_runs_only_mutations_whose_target_or_gates_changed(repo: Path):
    write(repo, "mutations/all.yaml", MUTATIONS)
    warm_gates(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mutations")
    proc = mutate(repo, "--changed-since", "HEAD")
    assert proc.returncode == 3 and "no mutations selected" in proc.stderr
    write(repo, "gates/clamp-warm.yaml", (repo / "gates/clamp-warm.yaml").read_text() + "kind: unit\n")
    _, doc, _ = run(repo, "--changed-since", "HEAD")
    assert [i["id"] for i in doc["items"]] == ["clamp-low", "clamp-high"]
    _, doc, _ = run(repo, "--changed-since", "HEAD~1")
    assert len(doc["items"]) == 4


def test_a_cached_kill_is_not_reused_after_the_gate_s_test_was_weakened(repo: Path):
    args = ("--file", "calc/__init__.py", "--anchor", "return a + b", "--replace", "return a - b", "--gate", "add")
    _, first, _ = run(repo, *args)
    assert first["items"][0]["verdict"] == "KILLED"
    # The test the gate runs no longer checks the sum: the old kill proves nothing now.
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) is not None\n")
    git(repo, "commit", "-q", "-am", "weaken")
    _, second, err = run(repo, *args)
    assert (second["items"][0]["verdict"], second["items"][0]["cached"]) == ("SURVIVED", False), err
    # Adding a mutation file elsewhere keeps the other results reusable.
    write(repo, "mutations/other.yaml", 'mutation: other\nfile: calc/__init__.py\nanchor: "return hi"\n'
                                        'replace: "return x"\nexpect: {red: [clamp]}\n')
    _, third, err = run(repo, *args)
    assert third["items"][0]["cached"] is True, err


def test_the_cache_key_carries_the_code_that_decided_not_only_its_version(tmp_path: Path):
    # helper-13: results cached by an earlier build of the same version (an install from another
    # commit, with a verdict rule fixed since) were reused
    from redfirst.mutations.cache import code_digest

    package = tmp_path / "gates"
    write(package, "rule.py", "FACTOR = 15\n")
    write(package, "sub/other.py", "X = 1\n")
    before = code_digest([package])
    write(package, "rule.py", "FACTOR = 16\n")
    assert code_digest([package]) != before
    write(package, "rule.py", "FACTOR = 15\n")
    assert code_digest([package]) == before
    write(package, "notes.txt", "not code\n")
    assert code_digest([package]) == before
    # and the key of every mutation carries it
    from redfirst.gates.model import Source
    from redfirst.gates.treekey import TreeState
    from redfirst.mutations import cache
    from redfirst.mutations.model import Mutation

    m = Mutation("m", "calc.py", "a", "b", Source(Path("m.yaml"), 1))
    tree = TreeState(tmp_path, {})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cache, "own_code", lambda: "one build")
        first = cache.key(m, b"a", [], tree, "env")
        mp.setattr(cache, "own_code", lambda: "another build")
        assert cache.key(m, b"a", [], tree, "env") != first
