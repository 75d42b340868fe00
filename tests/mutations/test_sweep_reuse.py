"""`mutate sweep` re-uses mutmut's verdicts for functions that did not change since its last
sweep (issue #17 item 1): the `mutants/` folder is kept in the repository's cache, and is
handed back to mutmut (3.8.1, pinned) only while the tests, the other files and the code
around the functions are as they were. Real git repositories, real mutmut runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import Snapshot, git, keep, make_repo, mutate, put_back, write
from test_sweep import require_mutmut

MORE = '''

def mul(a, b):
    return a * b


def double(x):
    return mul(x, 2)
'''
TESTS = {
    "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    "tests/test_double.py": "from calc import double\n\n\ndef test_double():\n    assert double(4) == 8\n",
}


def _add_mul_and_double(repo: Path) -> Path:
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text() + MORE)
    for rel, text in TESTS.items():
        write(repo, rel, text)
        name = Path(rel).stem.removeprefix("test_")
        write(repo, f"gates/{name}.yaml", f"gate: {name}\ndriver: {{type: pytest, run: [{rel}]}}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mul and double")
    return repo


@pytest.fixture
def change(repo: Path) -> Path:
    """A commit that adds mul and double (which calls mul), each with its test and gate."""
    require_mutmut()
    return _add_mul_and_double(repo)


Swept = tuple[Path, dict]


@pytest.fixture(scope="module")
def _swept_kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Snapshot, Swept]:
    require_mutmut()

    def set_up(work: Path, monkeypatch: pytest.MonkeyPatch) -> Swept:
        root = _add_mul_and_double(make_repo(work, monkeypatch))
        return root, sweep(root)

    return keep(tmp_path_factory, set_up)


@pytest.fixture
def swept(_swept_kept: tuple[Snapshot, Swept], monkeypatch: pytest.MonkeyPatch) -> Swept:
    """`change` after its first `mutate sweep` (a whole mutmut run), with that sweep's report: swept
    once per module and xdist worker, and put back for each test, repository and cache (where the
    sweep keeps mutmut's mutants/ folder), at the path it was swept at."""
    kept, made = _swept_kept
    put_back(kept, monkeypatch)
    return made


def sweep(root: Path) -> dict:
    proc = mutate(root, "sweep", "--since", "HEAD~1", "--json")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _edit(root: Path, old: str, new: str, rel: str = "calc/__init__.py") -> None:
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_a_sweep_with_nothing_changed_reuses_every_verdict(swept: Swept):
    change, first = swept
    assert first["reused"] == 0 and first["mutants"] > 0
    again = sweep(change)
    assert again["reused"] == again["mutants"] == first["mutants"]
    assert again["survivors"] == first["survivors"]
    text = mutate(change, "sweep", "--since", "HEAD~1")
    assert f"({first['mutants']} re-used from the last sweep" in text.stdout, text.stdout


def test_only_the_mutants_of_a_changed_function_and_of_what_depends_on_it_run_again(swept: Swept):
    change, first = swept
    # add is unchanged and neither calls mul nor shares a test with it: its verdicts stand;
    # mul changed, and double calls it: theirs are run again.
    _edit(change, "    return a * b\n", "    return b * a\n")
    again = sweep(change)
    assert 0 < again["reused"] < again["mutants"] == first["mutants"], again
    _edit(change, "    return a + b\n", "    return b + a\n")
    third = sweep(change)     # compared with the last sweep: only add changed now
    assert 0 < third["reused"] < third["mutants"], third


@pytest.mark.parametrize("edit", [
    ("tests/test_sub.py", "assert sub(5, 3) == 2", "assert sub(5, 3) is not None"),  # a weakened test
    ("calc/__init__.py", "\n\ndef mul(a, b):", "\nLIMIT = 1\n\n\ndef mul(a, b):"),      # code between functions
])
def test_a_changed_test_or_module_level_code_reuses_nothing(swept: Swept, edit: tuple[str, str, str]):
    change, first = swept
    assert first["reused"] == 0
    rel, old, new = edit
    _edit(change, old, new, rel)
    again = sweep(change)
    assert again["reused"] == 0, again


def test_a_weakened_test_never_keeps_mutmut_s_old_kill(swept: Swept):
    change, first = swept
    assert not [s for s in first["survivors"] if s["function"].endswith("x_mul")], first["survivors"]
    _edit(change, "assert mul(2, 3) == 6", "assert mul(2, 3) is not None", "tests/test_mul.py")
    _edit(change, "assert double(4) == 8", "assert double(4) is not None", "tests/test_double.py")
    again = sweep(change)
    assert [s for s in again["survivors"] if s["function"].endswith("x_mul")], again


def test_an_unchanged_function_whose_callee_changed_is_run_again(swept: Swept):
    change, first = swept
    assert not [s for s in first["survivors"] if s["function"].endswith("x_double")], first["survivors"]
    # mul now ignores b (test_mul still passes): double's mutant mul(x, 3) is no longer caught.
    _edit(change, "    return a * b\n", "    return 6 if (a, b) == (2, 3) else a * 2\n")
    again = sweep(change)
    assert again["reused"] > 0, again
    assert [s for s in again["survivors"] if s["function"].endswith("x_double")], again["survivors"]


def test_an_unchanged_function_a_changed_one_now_calls_is_run_again(change: Path):
    # triple is reached by no test: its mutants survive. double changes to call it, and
    # test_double now catches every mutant of triple: the kept "survived" must not stand.
    _edit(change, "\n\ndef double(x):", "\n\ndef triple(x):\n    return x * 3\n\n\ndef double(x):")
    first = sweep(change)
    assert [s for s in first["survivors"] if s["function"].endswith("x_triple")], first["survivors"]
    _edit(change, "    return mul(x, 2)\n", "    return mul(x, 2) if triple(x) == 12 else 0\n")
    again = sweep(change)
    assert again["reused"] > 0, again
    assert not [s for s in again["survivors"] if s["function"].endswith("x_triple")], again["survivors"]
