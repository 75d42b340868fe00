"""`mutate sweep PATH...` and `mutate sweep --all` sweep a whole package, not only what a
change touched (issue 35 item 7); mutmut's own `mutants/` folder is never swept; every pytest
configuration file and conftest.py goes into mutmut's copy, so a project configured in
`.pytest.ini` runs without `also_copy`. Real mutmut, real pytest, on a project the test writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write
from test_sweep import require_mutmut

from redfirst.mutations import sweep as sweeping
from redfirst.mutations.sweep import SweepScopeError


def test_sweeping_a_path_mutates_all_of_it_with_no_change_at_all(repo: Path):
    require_mutmut()
    before = git(repo, "status", "--porcelain")
    proc = mutate(repo, "sweep", "calc", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["files"] == ["calc/__init__.py"]
    # test_clamp_inside never passes a value above hi: `x > hi` survives, far from any change.
    lines = {s["line"] for s in doc["survivors"]}
    assert 11 in lines or 12 in lines, doc["survivors"]
    assert git(repo, "status", "--porcelain") == before
    assert not (repo / "mutants").exists()


def test_paths_and_since_together_or_a_missing_path_are_usage_errors_naming_it(repo: Path):
    both = mutate(repo, "sweep", "calc", "--since", "HEAD")
    assert both.returncode == 2 and "--since" in both.stderr and "Traceback" not in both.stderr
    missing = mutate(repo, "sweep", "nowhere/")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "nowhere" in missing.stderr and "does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr
    outside = mutate(repo, "sweep", "../")
    assert outside.returncode == 2 and "outside" in outside.stderr


def test_the_whole_configured_package_is_mutmut_s_source_paths_else_the_project_s_package(tmp_path: Path):
    root = tmp_path
    write(root, "src/shop/__init__.py", "X = 1\n")
    write(root, "src/shop/cart.py", "def total(xs):\n    return sum(xs)\n")
    write(root, "src/shop/test_cart.py", "def test_total():\n    pass\n")
    write(root, "tools/gen.py", "print(1)\n")
    write(root, "pyproject.toml", '[project]\nname = "shop"\n')
    assert sweeping.configured_package(root) == ["src/shop"]
    write(root, "pyproject.toml", '[project]\nname = "shop"\n\n[tool.mutmut]\nsource_paths = ["tools/"]\n')
    assert sweeping.configured_package(root) == ["tools/"]
    # Nothing configured and nothing to guess from: a message saying what to set.
    bare = tmp_path / "bare"
    write(bare, "a/b.py", "x = 1\n")
    with pytest.raises(SweepScopeError, match="source_paths"):
        sweeping.configured_package(bare)


def test_all_sweeps_the_configured_package(repo: Path):
    require_mutmut()
    write(repo, "pyproject.toml", '[tool.mutmut]\nsource_paths = ["calc/"]\n')
    write(repo, "tools/gen.py", "def gen():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    proc = mutate(repo, "sweep", "--all", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["files"] == ["calc/__init__.py"]


def test_mutmut_s_own_mutants_folder_is_never_swept_and_dot_pytest_ini_is_carried(repo: Path):
    require_mutmut()
    # pytest's configuration only in .pytest.ini, with a pythonpath: left out of mutmut's copy,
    # pytest found the one above it and imported the unmutated package (mutmut: no test covers).
    write(repo, ".pytest.ini", "[pytest]\npythonpath = .\npython_functions = check_*\n")
    write(repo, "checks/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef hi():\n    return 10\n")
    write(repo, "checks/test_hi.py", "from calc import clamp\n\n\ndef check_hi(hi):\n"
                                     "    assert clamp(5, 0, hi) == 5\n")
    write(repo, "gates/hi.yaml", "gate: hi\ndriver: {type: pytest, run: [checks/test_hi.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "checks")
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text()
          + "\n\ndef double(x):\n    if x > 100:\n        return 0\n    return x * 2\n")
    write(repo, "checks/test_double.py", "from calc import double\n\n\ndef check_double():\n"
                                         "    assert double(2) == 4\n")
    write(repo, "gates/double.yaml", "gate: double\ndriver: {type: pytest, run: [checks/test_double.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "double")
    # What a user's own `mutmut run` leaves, not ignored: mutmut's copy of the package.
    write(repo, "mutants/calc/__init__.py", (repo / "calc/__init__.py").read_text() + "\nY = 2\n")
    before = git(repo, "status", "--porcelain")
    proc = mutate(repo, "sweep", "--since", "HEAD~1", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["files"] == ["calc/__init__.py"]
    survivor = next(s for s in doc["survivors"] if s["removed"] == ["    if x > 100:"])
    assert survivor["tests"] == ["checks/test_double.py::check_double"]
    assert git(repo, "status", "--porcelain") == before
