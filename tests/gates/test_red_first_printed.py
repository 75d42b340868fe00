"""Adversarial round 2 of issue 33 on `redfirst_cmd.assertion_red`: a red at the base is an
assertion only from the framework's own report, never from a line a test printed that looks like
one (`FAILED x - AssertionError`, `FAIL: t (m.T)`), as the tests of a test tool print."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def base_without_mul(tmp_path: Path, need_tool: object) -> tuple[Path, str]:
    """A repository whose base has no `calc.mul`; HEAD adds it: a test calling it raises AttributeError at the base."""
    need_tool("git")  # type: ignore[operator]
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    write(root, "pytest.ini", "[pytest]\n")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    commit_all(root, "base")
    base = git(root, "rev-parse", "HEAD")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n")
    return root, base


def red_first(root: Path, gate_id: str, base: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, "red-first", gate_id, "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)


PYTEST_TESTS = '''
import calc


def test_mul():
    assert calc.mul(2, 3) == 6


def test_reports():
    print("\\nFAILED tests/test_other.py::test_x - AssertionError: a line a test tool's test prints")
'''


@pytest.mark.parametrize("flags", ["-rA", "-s"])
def test_a_printed_failed_line_is_no_assertion_red(tmp_path: Path, need_tool: object, flags: str) -> None:
    root, base = base_without_mul(tmp_path, need_tool)
    write(root, "tests/test_calc.py", PYTEST_TESTS)
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, format: pytest, "
                                f"run: [python3, -m, pytest, -q, {flags}, tests/test_calc.py]}}\n")
    commit_all(root, "mul and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "AttributeError" in proc.stdout and "proven" not in proc.stdout, proc.stdout


UNITTEST_TESTS = '''
import unittest

import calc


class T(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(calc.mul(2, 3), 6)

    def test_reports(self):
        print("FAIL: test_x (test_other.T.test_x)")
'''


def test_a_printed_fail_block_is_no_assertion_red(tmp_path: Path, need_tool: object) -> None:
    root, base = base_without_mul(tmp_path, need_tool)
    write(root, "test_calc.py", UNITTEST_TESTS)
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, format: unittest, "
                                "run: [python3, -m, unittest, -v, test_calc]}\n")
    commit_all(root, "mul and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no assertion failed" in proc.stdout and "proven" not in proc.stdout, proc.stdout


def test_a_unittest_failure_at_the_base_still_proves(tmp_path: Path, need_tool: object) -> None:
    root, base = base_without_mul(tmp_path, need_tool)
    write(root, "test_calc.py", UNITTEST_TESTS.replace("calc.mul(2, 3)", "calc.add(2, 3) + int(hasattr(calc, 'mul'))"))
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, format: unittest, "
                                "run: [python3, -m, unittest, -v, test_calc]}\n")
    commit_all(root, "mul and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 0 and "proven" in proc.stdout, proc.stdout + proc.stderr


def test_a_failed_line_printed_to_stderr_is_no_assertion_red(tmp_path: Path, need_tool: object) -> None:
    """pytest reports on stdout; under `-s` a line a test wrote to stderr is recorded after it."""
    root, base = base_without_mul(tmp_path, need_tool)
    write(root, "tests/test_calc.py", PYTEST_TESTS.replace('print("\\nFAILED', 'import sys; print("FAILED')
          .replace('prints")', 'prints", file=sys.stderr)'))
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, format: pytest, "
                                "run: [python3, -m, pytest, -q, -s, tests/test_calc.py]}\n")
    commit_all(root, "mul and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "AttributeError" in proc.stdout and "proven" not in proc.stdout, proc.stdout


TAP_PROGRAM = '''
import calc

print("TAP version 14")
print("1..2")
print("# Subtest: rounding")
print("    1..1")
print("    not ok 1 - half-even")             # inside a known failure: its parent is a TODO
print("not ok 1 - rounding # TODO half-even")
print("ok 2 - mul" if calc.mul(2, 3) == 6 else "not ok 2 - mul")
'''


def test_a_subtest_line_under_a_todo_is_no_assertion_red(tmp_path: Path, need_tool: object) -> None:
    """Only TAP's top-level lines count: an indented `not ok` is a subtest its parent summarises."""
    root, base = base_without_mul(tmp_path, need_tool)
    write(root, "tap_check.py", TAP_PROGRAM)
    write(root, "gates/g.yaml", "gate: g\ndriver: {type: command, format: tap, run: [python3, tap_check.py]}\n")
    commit_all(root, "mul and its gate")
    proc = red_first(root, "g", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "proven" not in proc.stdout, proc.stdout
