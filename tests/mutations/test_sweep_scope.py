"""What a sweep may mutate never reaches outside the project or into a test (review of issue 35,
item 7): a changed file that is a symbolic link out of the root is left out with no traceback,
and a Django/unittest test module (`tests.py`, unittest's default `test*.py`) is no source.
Real git repositories; the file choice is what `mutate sweep` hands mutmut."""

from __future__ import annotations

import os
from pathlib import Path

from mutate_helpers import git, mutate, write

from redfirst.mutations import sweep as sweeping


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    return root


def test_a_changed_symlink_out_of_the_root_is_not_swept_and_raises_nothing(tmp_path: Path):
    root = project(tmp_path)
    write(tmp_path, "elsewhere/secret.py", "TOKEN = 'x'\n")
    os.symlink(tmp_path / "elsewhere" / "secret.py", root / "calc" / "linked.py")     # untracked
    write(root, "calc/extra.py", "def sub(a, b):\n    return a - b\n")
    assert sweeping.changed_lines(root, "HEAD") == {"calc/extra.py": {1, 2}}
    git(root, "add", "-A")
    git(root, "commit", "-qm", "link")                                               # and tracked
    write(root, "calc/more.py", "X = 1\n")
    assert sweeping.changed_lines(root, "HEAD~1") == {"calc/extra.py": {1, 2}, "calc/more.py": {1}}


def test_a_symlink_in_the_package_to_a_test_file_sweeps_no_test(tmp_path: Path):
    root = project(tmp_path)
    os.symlink(Path("..") / "tests" / "test_calc.py", root / "calc" / "alias.py")
    assert sweeping.changed_lines(root, "HEAD") == {}
    assert sweeping.whole_files(root, [root / "calc"]) == {"calc/__init__.py": {1, 2}}


def test_a_django_or_unittest_tests_module_in_the_package_is_a_test_not_source(tmp_path: Path):
    root = project(tmp_path)
    write(root, "calc/tests.py", "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
                                 "        pass\n")
    write(root, "calc/test.py", "import unittest\n")
    assert sweeping.whole_files(root, [root / "calc"]) == {"calc/__init__.py": {1, 2}}
    assert set(sweeping.changed_lines(root, "HEAD")) == set()


def test_a_c_or_cpp_test_file_named_on_the_command_line_is_refused_not_swept_as_source(tmp_path: Path):
    root = project(tmp_path)
    write(root, "calc/add.cc", "int add(int a, int b) { return a + b; }\n")
    write(root, "calc/add_test.cc", "int main() { return 0; }\n")
    write(root, "tests/check_add.cpp", "int main() { return 0; }\n")
    for test in ("calc/add_test.cc", "tests/check_add.cpp"):
        proc = mutate(root, "sweep", test)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"{test}: a test file, not source" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert sweeping.is_test_file("calc/add_test.cc") and not sweeping.is_test_file("calc/add.cc")
