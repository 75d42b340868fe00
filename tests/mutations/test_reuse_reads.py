"""The result cache keyed per mutation by what its gates read (issue #17 item 1): an edit
re-runs only the mutations whose gates read the edited file; adding a file anywhere, a gate
that starts a process, or a build keys on more, never less. Real git repositories in tmp
folders and real `mutate` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mutate_helpers import CALC, Snapshot, git, keep, mutate, put_back, require_git, write

ADD_TEST = """\
from pathlib import Path

from addcheck import expect_sum

from calc import add


def test_add(factor):
    assert add(2, 3) == expect_sum(2, 3)
    assert int((Path(__file__).parent / "sums.txt").read_text()) == 5 * factor
"""
SUB_TEST = "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
MUTATIONS = """\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add]}
- mutation: sub-plus
  file: calc/__init__.py
  anchor: "return a - b"
  replace: "return a + b"
  expect: {red: [sub]}
"""


def _gate(gate_id: str, test: str, driver: str = "pytest") -> str:
    return f"gate: {gate_id}\ndriver: {{type: {driver}, run: [{test}], timeout: 60}}\n"


def _make_proj(base: Path) -> Path:
    """Gate `add` reads tests/add/ (its test, conftest, helper, data file) and calc; gate `sub`
    reads tests/sub/test_sub.py and calc; README.md and calc/unused.py no gate reads."""
    require_git()
    root = base / "repo"
    write(root, "calc/__init__.py", CALC)
    write(root, "calc/unused.py", "UNUSED = 1\n")
    write(root, "README.md", "calc\n")
    write(root, "tests/add/test_add.py", ADD_TEST)
    write(root, "tests/add/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef factor():\n    return 1\n")
    write(root, "tests/add/addcheck.py", "def expect_sum(a, b):\n    return 5\n")
    write(root, "tests/add/sums.txt", "5\n")
    write(root, "tests/sub/test_sub.py", SUB_TEST)
    write(root, "gates/add.yaml", _gate("add", "tests/add/test_add.py"))
    write(root, "gates/sub.yaml", _gate("sub", "tests/sub/test_sub.py"))
    write(root, "mutations/calc.yaml", MUTATIONS)
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project of `_make_proj`, with a cache of its own, never run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return _make_proj(tmp_path)


Outcomes = dict[str, tuple[str, bool]]
Ran = tuple[Path, Outcomes, str]
Kept = tuple[Snapshot, Ran]


def _keep_first_run(tmp_path_factory: pytest.TempPathFactory, make: Callable[[Path, pytest.MonkeyPatch], Path]) -> Kept:
    """`make(work, monkeypatch)` gives a repository under `work` (its cache: work/cache), run once
    by `mutate` and kept with its cache; with the run's outcomes and stderr."""
    def set_up(work: Path, mp: pytest.MonkeyPatch) -> Ran:
        root = make(work, mp)
        return (root, *_run(root))

    return keep(tmp_path_factory, set_up)


def _put_back(kept: Kept, monkeypatch: pytest.MonkeyPatch) -> Ran:
    put_back(kept[0], monkeypatch)
    return kept[1]


@pytest.fixture(scope="module")
def _proj_kept(tmp_path_factory: pytest.TempPathFactory) -> Kept:
    return _keep_first_run(tmp_path_factory, lambda work, _: _make_proj(work))


@pytest.fixture
def ran(_proj_kept: Kept, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """`proj` after its first `mutate` run, with that run's outcomes and stderr: the run is made
    once per module (and xdist worker), and each test gets the repository and the cache it left,
    put back at the path it ran at."""
    return _put_back(_proj_kept, monkeypatch)


def _run(root: Path) -> tuple[dict[str, tuple[str, bool]], str]:
    """(mutation id -> (outcome, cached), stderr)."""
    proc = mutate(root, "--json")
    doc = json.loads(proc.stdout)
    return {i["id"]: (i["verdict"], i["cached"]) for i in doc["items"]}, proc.stderr


def _append(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(path.read_text() + text)


def test_an_edit_no_gate_reads_reuses_every_result_without_a_baseline(ran: Ran):
    proj, first, err = ran
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    _append(proj, "README.md", "more words\n")
    _append(proj, "calc/unused.py", "UNUSED = 2\n")
    second, err = _run(proj)
    assert second == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", True)}, err
    assert "baseline" not in err      # looked up before anything ran
    git(proj, "commit", "-q", "-am", "docs")       # committed or not: the same content
    third, err = _run(proj)
    assert third == second, err


@pytest.mark.parametrize("edited", ["tests/add/test_add.py", "tests/add/conftest.py", "tests/add/addcheck.py",
                                    "tests/add/sums.txt"])
def test_an_edit_to_a_file_a_gate_read_reruns_only_the_mutations_of_that_gate(ran: Ran, edited: str):
    proj, first, err = ran
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    _append(proj, edited, "\n" if edited.endswith(".txt") else "\n# touched\n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", True)}, err


def test_an_edit_to_an_ignored_data_file_a_test_opens_reruns_its_mutations(proj: Path):
    # In place: a worktree holds no ignored file. Its content is keyed as it is on disk.
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    _append(proj, ".gitignore", "local/\n")
    write(proj, "local/sub.txt", "2\n")
    write(proj, "tests/sub/test_sub.py", "from pathlib import Path\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    assert sub(5, 3) == int(Path('local/sub.txt').read_text())\n")
    _run(proj)
    write(proj, "local/sub.txt", "2 \n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", False)}, err


@pytest.mark.parametrize("added", ["notes/todo.txt", "tests/sub/calc.py", "tests/conftest.py"])
def test_adding_a_file_anywhere_reruns_every_mutation(ran: Ran, added: str):
    # The paths of the tree are in every key: a new conftest.py, or a module that shadows an
    # import (tests/sub/calc.py before calc: sub's baseline breaks), changes what a gate
    # reads without editing anything it read.
    proj, first, err = ran
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    write(proj, added, "\n")
    again, err = _run(proj)
    assert {i: cached for i, (_, cached) in again.items()} == {"add-minus": False, "sub-plus": False}, err


def test_a_gate_that_starts_a_process_keys_on_the_whole_tree(proj: Path):
    write(proj, "tests/sub/test_sub.py", SUB_TEST + "\n\ndef test_runs_python():\n    import subprocess, sys\n"
                                                   "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    _append(proj, "README.md", "more words\n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", False)}, err


def test_a_gate_build_keys_on_the_whole_tree(proj: Path):
    write(proj, "gates/sub.yaml", "build: python -m py_compile calc/__init__.py\n" + _gate("sub",
                                                                                            "tests/sub/test_sub.py"))
    _run(proj)
    _append(proj, "README.md", "more words\n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", False)}, err


@pytest.mark.parametrize("weakened", [
    ("tests/add/test_add.py", "assert add(2, 3) == expect_sum", "assert add(2, 3) or expect_sum"),
    ("tests/add/addcheck.py", "    return 5", "    from calc import add\n\n    return add(a, b)"),
])
def test_a_weakened_test_or_helper_never_keeps_an_old_kill(ran: Ran, weakened: tuple[str, str, str]):
    rel, old, new = weakened
    proj, first, _ = ran
    assert first["add-minus"] == ("KILLED", False)
    path = proj / rel
    path.write_text(path.read_text().replace(old, new))
    again, err = _run(proj)
    assert again["add-minus"] == ("SURVIVED", False), err
    assert again["sub-plus"] == ("KILLED", True), err


def _warm(gate_id: str, test: str, hook: Path | None) -> str:
    """A pytest-warm gate; with `hook`, its warm process installs the read hook before it imports
    the code under test (as the warm server's warm-up is to: a preloaded module does it here)."""
    if hook is None:
        return _gate(gate_id, test, "pytest-warm")
    hook.mkdir(exist_ok=True)
    (hook / "redfirst_warm_hook.py").write_text("from redfirst.gates import read_hook\n\nread_hook.install()\n")
    return (f"gate: {gate_id}\ndriver: {{type: pytest-warm, run: [{test}], timeout: 60, "
            f"preload: [redfirst_warm_hook], env: {{PYTHONPATH: {str(hook)!r}}}}}\n")


def test_a_pytest_warm_gate_keys_on_what_it_read(proj: Path, tmp_path: Path):
    write(proj, "gates/add.yaml", _warm("add", "tests/add/test_add.py", tmp_path / "hook"))
    _run(proj)
    _append(proj, "README.md", "more words\n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", True)}, err
    _append(proj, "tests/add/addcheck.py", "\n# touched\n")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", True)}, err


@pytest.mark.parametrize("hooked", [True, False])
def test_a_data_file_read_at_import_in_a_warm_process_reruns_its_mutations(proj: Path, tmp_path: Path,
                                                                          hooked: bool):
    # read at import only (the test reads sums.txt itself as it runs)
    write(proj, "tests/add/sum.cfg", "5\n")
    write(proj, "tests/add/addcheck.py", "from pathlib import Path\n\nSUM = int(Path(__file__).with_name("
                                         "'sum.cfg').read_text())\n\n\ndef expect_sum(a, b):\n    return SUM\n")
    write(proj, "gates/add.yaml", _warm("add", "tests/add/test_add.py", tmp_path / "hook" if hooked else None))
    first, err = _run(proj)
    assert first["add-minus"] == ("KILLED", False), err
    _append(proj, "tests/add/sum.cfg", "\n")
    again, err = _run(proj)
    assert again["add-minus"] == ("KILLED", False), err


def test_a_reused_kill_still_proves_its_gate_on_the_edited_tree(ran: Ran):
    # Proofs are keyed by the whole tree (redfirst.gates.proven): a hit re-files the proof for the tree
    # as it is now, since re-running would give the same RED.
    proj, first, err = ran
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    _append(proj, "README.md", "more words\n")
    gates = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
    unproven = subprocess.run([*gates, "run", "add", "--require-proven", "--root", str(proj)], capture_output=True,
                              text=True, cwd=proj, timeout=120)
    assert unproven.returncode == 3, unproven.stdout     # the tree changed: the old proof is not this tree's
    again, err = _run(proj)
    assert again["add-minus"] == ("KILLED", True), err
    proven = subprocess.run([*gates, "run", "add", "--require-proven", "--root", str(proj)], capture_output=True,
                            text=True, cwd=proj, timeout=120)
    assert proven.returncode == 0, proven.stdout + proven.stderr


LINKED_SUB_TEST = """\
from pathlib import Path

from calc import sub


def test_sub():
    # Lenient where the mode file says so: what the link leads to decides whether sub-plus is killed.
    assert sub(5, 3) == 2 or (Path(__file__).parent / "mode.txt").read_text() == "lenient\\n"
"""


@pytest.mark.parametrize("edit", ["the-target-inside", "the-target-outside", "retarget-the-link",
                                  "retarget-an-ignored-link"])
def test_a_file_read_through_a_link_keys_on_the_link_and_on_what_was_read(proj: Path, tmp_path: Path, edit: str):
    # The test reads tests/sub/mode.txt, a symbolic link: the key must cover where the link leads
    # (its target path) and the content read through it, else a stale KILLED is reused.
    outside = tmp_path / "outside"
    write(outside, "strict.txt", "strict\n")
    write(proj, "tests/sub/strict.txt", "strict\n")
    write(proj, "tests/sub/lenient.txt", "lenient\n")
    link = proj / "tests/sub/mode.txt"
    link.symlink_to(outside / "strict.txt" if edit == "the-target-outside" else Path("strict.txt"))
    if edit == "retarget-an-ignored-link":
        _append(proj, ".gitignore", "tests/sub/mode.txt\n")
        write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    write(proj, "tests/sub/test_sub.py", LINKED_SUB_TEST)
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "a linked mode file")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    if edit == "the-target-inside":
        (proj / "tests/sub/strict.txt").write_text("lenient\n")
    elif edit == "the-target-outside":
        (outside / "strict.txt").write_text("lenient\n")
    else:
        link.unlink()
        link.symlink_to("lenient.txt")
    again, err = _run(proj)
    assert again["sub-plus"] == ("SURVIVED", False), err
    assert again["add-minus"] == ("KILLED", True), err


def test_a_file_added_to_an_ignored_folder_a_test_lists_reruns_its_mutations(proj: Path):
    # In place: a worktree holds no ignored file. The test globs local/: a file added there is
    # read by the next run, though no path of the tree (git's list) changed.
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    _append(proj, ".gitignore", "local/\n")
    write(proj, "local/a.txt", "strict")
    write(proj, "tests/sub/test_sub.py", "from pathlib import Path\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    assert sub(5, 3) == 2 or any(p.read_text() == 'lenient'\n"
                                         "                                 for p in Path('local').glob('*.txt'))\n")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    write(proj, "local/b.txt", "lenient")
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("SURVIVED", False)}, err


@pytest.mark.parametrize("driver", ["pytest", "pytest-warm"])
def test_a_variable_of_the_environment_a_test_reads_is_part_of_the_key(proj: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      driver: str) -> None:
    # Python raises no audit event for a read of os.environ: the environment the gates inherit is keyed
    # whole, but for variables of the session that no test reads (PWD, SHLVL, a CI run's number).
    write(proj, "tests/sub/test_sub.py", "import os\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    assert sub(5, 3) == 2 or os.environ.get('RF_LENIENT')\n")
    write(proj, "gates/sub.yaml", _gate("sub", "tests/sub/test_sub.py", driver))
    git(proj, "commit", "-qam", "sub reads RF_LENIENT")
    monkeypatch.delenv("RF_LENIENT", raising=False)
    first, err = _run(proj)
    assert first["sub-plus"] == ("KILLED", False), err
    monkeypatch.setenv("RF_LENIENT", "1")
    monkeypatch.setenv("SHLVL", "7")
    second, err = _run(proj)
    assert second["sub-plus"] == ("SURVIVED", False), err
    monkeypatch.setenv("SHLVL", "8")
    third, err = _run(proj)
    assert third["sub-plus"] == ("SURVIVED", True), err


@pytest.mark.parametrize("config", ["setup.cfg", "tox.ini"])
def test_an_edit_to_a_config_file_pytest_looked_at_reruns_every_mutation(proj: Path, config: str):
    # helper-13 finding 2: pytest reads setup.cfg and tox.ini (looking for its section) before the
    # read hook is in place, and one without a pytest section is no ini file (config.inipath None):
    # adding `[tool:pytest] addopts = -k "not add"` then deselected the killing test, and the cached
    # KILLED was reused (truth: the gate runs no test)
    write(proj, config, "[metadata]\nname = calc\n")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", config)
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    section = "[tool:pytest]" if config == "setup.cfg" else "[pytest]"
    _append(proj, config, f"\n{section}\naddopts = -k 'not test_add'\n")
    again, err = _run(proj)
    assert {i: cached for i, (_, cached) in again.items()} == {"add-minus": False, "sub-plus": False}, err
    assert again["add-minus"][0] != "KILLED", err


def test_an_edit_to_a_file_read_above_the_root_reruns_its_mutations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # helper-13 finding 3: a monorepo whose redfirst root is a sub-project, with pytest's ini and
    # a conftest.py at the top: reads outside the root were dropped and the tree key covers only
    # the root, so an edit there that deselects the killing test reused the cached KILLED
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    top = tmp_path / "mono"
    root = top / "pkg"
    write(top, "pytest.ini", "[pytest]\n")
    write(top, "conftest.py", "KEEP = True\n\n\ndef pytest_collection_modifyitems(items):\n"
                              "    items[:] = [i for i in items if KEEP]\n")
    write(root, "redfirst.yaml", "gates: {paths: [gates]}\n")
    write(root, "calc/__init__.py", CALC)
    write(root, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    write(root, "gates/add.yaml", _gate("add", "tests/test_add.py"))
    write(root, "mutations/calc.yaml", MUTATIONS.split("- mutation: sub-plus")[0])
    write(top, ".gitignore", "__pycache__/\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "mono")
    first, err = _run(root)
    assert first == {"add-minus": ("KILLED", False)}, err
    write(top, "conftest.py", (top / "conftest.py").read_text().replace("KEEP = True", "KEEP = False"))
    again, err = _run(root)
    assert again["add-minus"] != ("KILLED", True), err


def test_a_tree_that_changed_while_the_run_went_on_files_no_result_and_no_proof(proj: Path):
    # helper-13 finding 4: in place, the gates run on the user's live tree; a result decided while
    # the tree was other than the one the run began on was filed under the old tree (cache and
    # proof). Here the test itself edits a tracked file no gate reads, as a save in an editor would.
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    write(proj, "tests/sub/test_sub.py", "from pathlib import Path\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    notes = Path(__file__).parents[2] / 'README.md'\n"
                                         "    notes.write_text(notes.read_text() + 'x')\n"
                                         "    assert sub(5, 3) == 2\n")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "a test that edits the tree")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    assert "changed while" in err, err
    assert not list((proj / ".redfirst").glob("proofs/**/*.json")), err
    again, err = _run(proj)
    assert {i: cached for i, (_, cached) in again.items()} == {"add-minus": False, "sub-plus": False}, err


def test_an_edit_undone_before_the_run_ended_files_no_result_and_no_proof(proj: Path):
    # an editor's save and its undo while the mutations ran in place: the tree at the end is the
    # tree at the start, but gates ran on the other one in between (the content alone cannot tell)
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    write(proj, "tests/sub/test_sub.py", "from pathlib import Path\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    notes = Path(__file__).parents[2] / 'README.md'\n"
                                         "    was = notes.read_text()\n"
                                         "    notes.write_text(was + 'x')\n"
                                         "    notes.write_text(was)\n"
                                         "    assert sub(5, 3) == 2\n")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "a test that edits the tree and undoes it")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    assert "written while" in err, err
    assert not list((proj / ".redfirst").glob("proofs/**/*.json")), err
    again, err = _run(proj)
    assert {i: cached for i, (_, cached) in again.items()} == {"add-minus": False, "sub-plus": False}, err


def test_a_mutated_file_written_and_put_back_by_another_files_no_result_and_no_proof(proj: Path):
    # helper-15 finding 2: every file mutated in the run was spared the check, so a save of one and
    # its undo went unseen; here the test writes the mutated module and puts it back
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    write(proj, "tests/sub/test_sub.py", "from pathlib import Path\n\nfrom calc import sub\n\n\ndef test_sub():\n"
                                         "    module = Path(__file__).parents[2] / 'calc' / '__init__.py'\n"
                                         "    was = module.read_text()\n"
                                         "    module.write_text(was + '# x')\n"
                                         "    module.write_text(was)\n"
                                         "    assert sub(5, 3) == 2\n")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "a test that writes the module under test and undoes it")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    assert "written while" in err and "calc/__init__.py" in err, err
    again, err = _run(proj)
    assert {i: cached for i, (_, cached) in again.items()} == {"add-minus": False, "sub-plus": False}, err


def test_a_mutated_file_reached_through_a_link_is_cached_in_place(proj: Path):
    # helper-15 finding 8: the module is a link to the file redfirst writes; that file's own path
    # read as written by someone else on every run, and no in-place result was ever cached
    (proj / "src").mkdir()
    (proj / "calc" / "__init__.py").rename(proj / "src" / "calc_impl.py")
    (proj / "calc" / "__init__.py").symlink_to(Path("..") / "src" / "calc_impl.py")
    write(proj, "mutations/calc.yaml", MUTATIONS.replace("  expect:", "  mode: in-place\n  expect:"))
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "the module through a link")
    first, err = _run(proj)
    assert first == {"add-minus": ("KILLED", False), "sub-plus": ("KILLED", False)}, err
    assert "written while" not in err, err
    again, err = _run(proj)
    assert again == {"add-minus": ("KILLED", True), "sub-plus": ("KILLED", True)}, err


def _outer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "outer") -> Path:
    """A repository under a folder that holds pytest's ini file (pytest's root folder is above the
    repository, so it looks for conftest.py files from there down)."""
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outer = tmp_path / name
    root = outer / "repo"
    write(outer, "pytest.ini", "[pytest]\n")
    write(root, "calc/__init__.py", CALC)
    write(root, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    write(root, "gates/add.yaml", _gate("add", "tests/test_add.py"))
    write(root, "mutations/calc.yaml", MUTATIONS.split("- mutation: sub-plus")[0].replace(
        "  expect:", "  mode: in-place\n  expect:"))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


@pytest.fixture(scope="module")
def _outer_kept(tmp_path_factory: pytest.TempPathFactory) -> Kept:
    return _keep_first_run(tmp_path_factory, _outer)


@pytest.fixture
def outer_ran(_outer_kept: Kept, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """`_outer`'s repository after its first `mutate` run (made once per module and worker, put back
    for each test at the path it ran at), with that run's outcomes and stderr."""
    return _put_back(_outer_kept, monkeypatch)


# A conftest.py that makes every test pass: the mutation survives where pytest loads it.
PASSING = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
           "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")


def test_a_conftest_added_above_the_root_reruns_its_mutations(outer_ran: Ran):
    # helper-14 finding 1: pytest only asks whether a conftest.py is there; one added above the
    # root was read by no earlier run, so it was in no read set, and the cached KILLED stayed
    root, first, err = outer_ran
    assert first == {"add-minus": ("KILLED", False)}, err
    write(root.parent, "conftest.py", PASSING)
    again, err = _run(root)
    assert again == {"add-minus": ("SURVIVED", False)}, err


def test_another_checkout_of_the_same_tree_does_not_take_a_result_resting_on_the_firsts_surroundings(
        tmp_path: Path, outer_ran: Ran):
    # helper-14 finding 2: the cache is the user's, the outside reads are a checkout's
    root, first, err = outer_ran
    assert first == {"add-minus": ("KILLED", False)}, err
    other = tmp_path / "elsewhere"
    write(other, "pytest.ini", "[pytest]\n")
    write(other, "conftest.py", PASSING)
    git(tmp_path, "clone", "-q", str(root), str(other / "repo"))
    again, err = _run(other / "repo")
    assert again == {"add-minus": ("SURVIVED", False)}, err


def test_a_module_added_to_an_earlier_path_entry_outside_the_root_reruns(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch, proj: Path):
    # helper-14 finding 3: folders outside the root were left out, so a module that now shadows the
    # helper the test imported from a later path entry kept the cached KILLED
    overrides, common = tmp_path / "overrides", tmp_path / "common"
    overrides.mkdir()
    write(common, "addcheck2.py", "def expect_sum(a, b):\n    return 5\n")
    monkeypatch.setenv("PYTHONPATH", f"{overrides}{os.pathsep}{common}")
    write(proj, "tests/sub/test_sub.py", "from addcheck2 import expect_sum\n\nfrom calc import add\n\n\n"
                                         "def test_sub():\n    assert add(2, 3) == expect_sum(2, 3)\n")
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "a helper outside the root")
    first, err = _run(proj)
    assert first["sub-plus"] == ("SURVIVED", False) and first["add-minus"][0] == "KILLED", err
    write(overrides, "addcheck2.py", "def expect_sum(a, b):\n    return a + b\n")
    again, err = _run(proj)
    assert again["sub-plus"][1] is False, err     # (every gate has the folder on its path: all rerun)


def test_a_worktree_refuses_a_tree_whose_pytest_configuration_lies_above_the_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # helper-14 finding 6: with outer/pytest.ini and outer/conftest.py (not in git), the user's tree
    # runs its tests under them and a worktree under the cache folder does not: the same mutation
    # was KILLED in a worktree and SURVIVED in place. A setup error (ERROR, exit 2), naming the file.
    root = _outer(tmp_path, monkeypatch)
    write(root.parent, "conftest.py", PASSING)
    write(root, "mutations/calc.yaml", MUTATIONS.split("- mutation: sub-plus")[0])
    git(root, "commit", "-q", "-am", "worktree mode")
    proc = mutate(root, "--json")
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 2 and item["verdict"] == "ERROR", proc.stdout + proc.stderr
    assert str(root.parent / "pytest.ini") in item["reason"] and "in-place" in item["reason"]
    (root.parent / "pytest.ini").unlink()
    write(root.parent, "tox.ini", "[tox]\n")      # no pytest section: not pytest's configuration
    assert mutate(root, "--json").returncode == 0
