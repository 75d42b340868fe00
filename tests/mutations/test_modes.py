"""Workspaces: worktree (default) for a root that is a subfolder of the repository,
commit mode for gates that read `merge-base..HEAD`, and nothing of the user's moved."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

RECORD_TEST = '''\
import subprocess


def test_no_commit_on_the_branch_touches_calc():
    changed = subprocess.run(["git", "diff", "--name-only", "main...HEAD"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert "calc/__init__.py" not in changed
'''


def refs_state(root: Path) -> tuple[str, ...]:
    return (git(root, "rev-parse", "HEAD"), git(root, "symbolic-ref", "HEAD"), git(root, "for-each-ref"),
            git(root, "status", "--porcelain"), git(root, "worktree", "list"), git(root, "ls-files", "-s"))


def test_commit_mode_is_seen_by_a_record_gate_and_moves_no_ref(repo: Path):
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "tests/test_record.py", RECORD_TEST)
    write(repo, "gates/record.yaml", "gate: record\ndriver: {type: pytest, run: [tests/test_record.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "record gate")
    body = ('file: calc/__init__.py\nanchor: "    return a + b\\n"\nreplace: "    return a - b\\n"\n'
            "expect: {red: [record], green: [sub]}\n")
    write(repo, "mutations/commit.yaml", "- mutation: as-commit\n  mode: commit\n  " + body.replace("\n", "\n  ")
          + "\n- mutation: as-edit\n  mode: worktree\n  " + body.replace("\n", "\n  "))
    before = refs_state(repo)
    proc = mutate(repo, "--json")
    doc = json.loads(proc.stdout)
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    # An unstaged edit reads as passing against a record gate; the scratch commit does not.
    assert verdicts == {"as-commit": "KILLED", "as-edit": "SURVIVED"}, proc.stderr
    assert refs_state(repo) == before
    assert "mutate" not in git(repo, "log", "--all", "--format=%an")


def test_worktree_mode_handles_a_root_below_the_git_top_level(repo: Path, tmp_path: Path):
    top = tmp_path / "mono"
    top.mkdir()
    shutil.copytree(repo, top / "proj", ignore=shutil.ignore_patterns(".git"))
    write(top, "README", "a monorepo\n")
    git(top, "init", "-q", "-b", "main")
    write(top, "proj/mutations/m.yaml", 'mutation: m\nfile: calc/__init__.py\nanchor: "return a + b"\n'
                                        'replace: "return a - b"\nexpect: {red: [add], green: [sub]}\n')
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "mono")
    # An uncommitted edit of the user is part of the untouched tree the gates see.
    write(top, "proj/tests/test_sub.py", (top / "proj/tests/test_sub.py").read_text().replace("== 2", "== 3"))
    proc = mutate(top / "proj", "--json", cwd=top)
    doc = json.loads(proc.stdout)
    item = doc["items"][0]
    assert item["verdict"] == "ERROR", proc.stderr
    assert item["reason"].startswith("gate not green before mutation: sub RED")
    git(top, "checkout", "-q", "--", "proj/tests/test_sub.py")
    proc = mutate(top / "proj", "--json", cwd=top)
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    assert git(top, "status", "--porcelain") == ""
    assert len(git(top, "worktree", "list").splitlines()) == 1


def test_worktree_mode_sees_staged_edits_and_staged_new_files(repo: Path):
    # A staged edit (index differs from HEAD, working file equals the index) is part of the
    # user's tree: the gates must not run HEAD's stronger test and report a kill.
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) is not None\n")
    write(repo, "calc/extra.py", "def one():\n    return 1\n")
    git(repo, "add", "tests/test_add.py", "calc/extra.py")
    git(repo, "rm", "-q", "tests/test_clamp.py")
    before = refs_state(repo)
    proc = mutate(repo, "--json", "--file", "calc/__init__.py", "--anchor", "return a + b",
                  "--replace", "return a - b", "--gate", "add")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "SURVIVED", proc.stderr
    proc = mutate(repo, "--json", "--file", "calc/extra.py", "--anchor", "return 1",
                  "--replace", "return 2", "--gate", "add")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "SURVIVED", proc.stderr
    assert refs_state(repo) == before


def test_in_place_mode_leaves_pytest_s_last_failed_list_alone(repo: Path):
    # The mutant's failure is not the user's: `pytest --lf` afterwards must not rerun it.
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: calc/__init__.py\nmode: in-place\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [add]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    lastfailed = repo / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert not lastfailed.exists() or "test_add" not in lastfailed.read_text(), lastfailed.read_text()


def test_a_mutated_run_keeps_pytest_s_cache_working(repo: Path):
    # The `cache` fixture and --ff in addopts work under a mutation as without one: an
    # equivalent mutant survives, a real one is killed.
    write(repo, "pytest.ini", "[pytest]\naddopts = --ff\n")
    write(repo, "tests/test_cached.py", "from calc import add\n\n\ndef test_add_cached(cache):\n"
                                        "    cache.set('calc/add', add(2, 3))\n    assert cache.get('calc/add', None) == 5\n")
    write(repo, "gates/cached.yaml", "gate: cached\ndriver: {type: pytest-warm, run: [tests/test_cached.py]}\n")
    write(repo, "mutations/m.yaml", '- mutation: equivalent\n  file: calc/__init__.py\n  anchor: "return a + b"\n'
                                    '  replace: "return b + a"\n  expect: {red: [cached]}\n'
                                    '- mutation: real\n  file: calc/__init__.py\n  anchor: "return a + b"\n'
                                    '  replace: "return a - b"\n  expect: {red: [cached]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "cached")
    proc = mutate(repo, "--json")
    outcomes = {i["id"]: i["verdict"] for i in json.loads(proc.stdout)["items"]}
    assert outcomes == {"equivalent": "SURVIVED", "real": "KILLED"}, proc.stderr


@pytest.mark.parametrize("mode", ["in-place", "worktree"])
def test_a_mutation_of_a_tracked_symlink_edits_its_target_and_keeps_the_link(repo: Path, mode: str):
    # The link is the user's tree as committed: the mutation goes to the file it names,
    # and afterwards the link is still a link (git sees no typechange).
    core = repo / "calc" / "core.py"
    (repo / "calc" / "__init__.py").rename(core)
    (repo / "calc" / "__init__.py").symlink_to("core.py")
    write(repo, "mutations/m.yaml", f'mutation: m\nfile: calc/__init__.py\nmode: {mode}\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [add], green: [sub]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "calc through a link")
    before = core.read_bytes()
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    link = repo / "calc" / "__init__.py"
    assert link.is_symlink() and os.readlink(link) == "core.py"
    assert core.read_bytes() == before
    assert git(repo, "status", "--porcelain") == ""

TRAILER_TEST = '''\
import subprocess


def test_every_commit_of_the_branch_is_signed_off():
    log = subprocess.run(["git", "log", "--format=%H %(trailers:key=Signed-off-by,valueonly,separator=;)",
                          "main..HEAD"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert log and all(len(line.split(" ", 1)) == 2 and line.split(" ", 1)[1] for line in log), log
'''


def test_commit_mode_baseline_is_a_scratch_commit_so_a_message_checker_is_not_killed_by_it(repo: Path):
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "tests/test_trailers.py", TRAILER_TEST)
    write(repo, "gates/trailers.yaml", "gate: trailers\ndriver: {type: pytest, run: [tests/test_trailers.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "trailer gate\n\nSigned-off-by: t <t@t>")
    # A change no message checker reads: the scratch commit must not look different from the baseline's.
    write(repo, "mutations/typo.yaml", "- mutation: typo\n  mode: commit\n  file: calc/__init__.py\n"
          '  anchor: "    return a + b\\n"\n  replace: "    return b + a\\n"\n  expect: {red: [trailers]}\n')
    before = refs_state(repo)
    proc = mutate(repo, "--json")
    doc = json.loads(proc.stdout)
    (item,) = doc["items"]
    assert (proc.returncode, item["verdict"]) == (1, "SURVIVED"), item
    assert refs_state(repo) == before


ONE_COMMIT_TEST = '''\
import subprocess


def test_the_branch_is_one_commit():
    count = subprocess.run(["git", "rev-list", "--count", "main..HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert count == "1", count
'''


def test_a_gate_red_on_the_scratch_commit_itself_is_red_at_the_commit_mode_baseline(repo: Path):
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "tests/test_one_commit.py", ONE_COMMIT_TEST)
    write(repo, "gates/one.yaml", "gate: one\ndriver: {type: pytest, run: [tests/test_one_commit.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one-commit gate")
    write(repo, "mutations/typo.yaml", "- mutation: typo\n  mode: commit\n  file: calc/__init__.py\n"
          '  anchor: "    return a + b\\n"\n  replace: "    return b + a\\n"\n  expect: {red: [one]}\n')
    proc = mutate(repo, "--json")
    (item,) = json.loads(proc.stdout)["items"]
    # Any scratch commit makes the branch two commits: that is the baseline's RED, never the mutation's kill.
    assert (proc.returncode, item["verdict"]) == (2, "ERROR"), item
    assert "not green before mutation" in item["reason"]


COMMITTED_TEST = '''\
import subprocess


def test_the_committed_calc_adds_and_subtracts():
    source = subprocess.run(["git", "show", "HEAD:calc/__init__.py"], capture_output=True, text=True,
                            check=True).stdout
    calc: dict = {}
    exec(source, calc)
    assert calc["add"](2, 3) == 5
    assert calc["sub"](5, 3) == 2
'''


def test_commit_mode_baseline_and_mutation_commit_the_same_tree_but_for_the_mutation(repo: Path):
    # issue 33: the mutated scratch commit took the user's uncommitted edit of the target file and
    # the baseline's did not, so a gate reading the commit saw two trees (here: RED at the
    # baseline, an ERROR; the other way round, a kill by the user's edit, not the mutation).
    write(repo, "tests/test_committed.py", COMMITTED_TEST)
    write(repo, "gates/committed.yaml", "gate: committed\ndriver: {type: pytest, run: [tests/test_committed.py]}\n")
    calc = repo / "calc" / "__init__.py"
    calc.write_text(calc.read_text().replace("    return a - b\n", "    return a - b - 1\n"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a committed bug in sub")
    calc.write_text(calc.read_text().replace("    return a - b - 1\n", "    return a - b\n"))   # the fix, uncommitted
    write(repo, "mutations/add.yaml",
          "- mutation: add-minus\n  mode: commit\n  file: calc/__init__.py\n"
          '  anchor: "    return a + b\\n"\n  replace: "    return a - b\\n"\n  expect: {red: [committed]}\n'
          "- mutation: add-swapped\n  mode: commit\n  file: calc/__init__.py\n"
          '  anchor: "    return a + b\\n"\n  replace: "    return b + a\\n"\n  expect: {red: [committed]}\n')
    before = refs_state(repo)
    proc = mutate(repo, "--json")
    verdicts = {i["id"]: i["verdict"] for i in json.loads(proc.stdout)["items"]}
    # The baseline commits the user's fix as the mutated commits do: only the mutation differs.
    assert verdicts == {"add-minus": "KILLED", "add-swapped": "SURVIVED"}, proc.stdout + proc.stderr
    assert refs_state(repo) == before
    assert "return a - b\n" in calc.read_text() and "- 1" not in calc.read_text()
