"""Adversarial round 2 of issue 33 on `harness.not_a_kill`: a red made of set-up errors alone is
no kill however pytest's terminal output is shaped: without its short summary (`-rN`), or with a
test's captured output holding a line that looks like one (`FAILED x - ...`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

FIXTURE = '''
import pytest

from calc import add


@pytest.fixture
def total():
    return add(2, 3)


def test_runs(total):
    assert total == 5


def test_prints():
    print("\\nFAILED tests/test_other.py::test_x - AssertionError: what a pytest plugin's test prints")
    assert True     # -rA shows what a passing test printed, before the short summary
'''


def _outcome(repo: Path, flags: str, printing: bool | None) -> dict:
    """`printing` None: the caller wrote the tests."""
    if printing is not None:
        write(repo, "tests/test_fixture.py", FIXTURE if printing else FIXTURE.split("\n\ndef test_prints")[0] + "\n")
    write(repo, "gates/setup.yaml", "gate: setup\ndriver:\n  type: command\n  format: pytest\n"
                                    f"  run: [python3, -m, pytest, {flags}, tests/test_fixture.py]\n  timeout: 60\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a set-up")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return str(a) + b'\nexpect: {red: [setup]}\n")
    proc = mutate(repo, "--json", "--no-cache")
    assert proc.stdout.strip(), proc.stderr
    (item,) = json.loads(proc.stdout)["items"]
    return item


@pytest.mark.parametrize("flags", ["-q", "-qrN", "-rN"])
def test_a_setup_error_without_a_short_summary_is_not_a_kill(repo: Path, flags: str):
    item = _outcome(repo, flags, printing=False)
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


@pytest.mark.parametrize("flags", ["-rA", "-s"])
def test_a_setup_error_beside_a_printed_failed_line_is_not_a_kill(repo: Path, flags: str):
    item = _outcome(repo, flags, printing=True)
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


TC = '''
import unittest

from calc import add


class T(unittest.TestCase):
    def setUp(self):
        self.total = add(2, 3)

    def test_runs(self):
        self.assertEqual(self.total, 5)
'''


@pytest.mark.parametrize("flags", ["-q", "--tb=long", "--tb=native"])
def test_a_unittest_setup_error_in_pytest_terminal_output_is_not_a_kill(repo: Path, flags: str):
    """pytest counts a TestCase's setUp error as a failed test (it runs in the call phase)."""
    write(repo, "tests/test_tc.py", TC)
    write(repo, "gates/setup.yaml", "gate: setup\ndriver:\n  type: command\n  format: pytest\n"
                                    f"  run: [python3, -m, pytest, {flags}, tests/test_tc.py]\n  timeout: 60\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TestCase")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return str(a) + b'\nexpect: {red: [setup]}\n")
    proc = mutate(repo, "--json", "--no-cache")
    (item,) = json.loads(proc.stdout)["items"]
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


@pytest.mark.parametrize("flags", ["-q", "-rN", "--tb=native"])
def test_a_test_method_failing_in_pytest_terminal_output_is_a_kill(repo: Path, flags: str):
    write(repo, "tests/test_tc.py", TC.replace("self.total = add(2, 3)", "pass").replace(
        "self.assertEqual(self.total, 5)", "self.assertEqual(add(2, 3), 5)"))
    write(repo, "gates/call.yaml", "gate: call\ndriver:\n  type: command\n  format: pytest\n"
                                   f"  run: [python3, -m, pytest, {flags}, tests/test_tc.py]\n  timeout: 60\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TestCase")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return str(a) + b'\nexpect: {red: [call]}\n")
    proc = mutate(repo, "--json", "--no-cache")
    (item,) = json.loads(proc.stdout)["items"]
    assert item["verdict"] == "KILLED", item


@pytest.mark.parametrize("to", ["", ", file=__import__('sys').stderr"], ids=["stdout", "stderr"])
def test_a_unittest_setup_error_beside_a_printed_error_block_is_not_a_kill(repo: Path, to: str):
    """unittest reports on stderr, where a test may write too: its own report is the last blocks,
    as many as its result line counts (`FAILED (errors=1)`)."""
    write(repo, "tests/test_tc.py", TC + "\n\nclass Prints(unittest.TestCase):\n    def test_reports(self):\n"
                                         f"        print('\\nERROR: test_x (test_other.T.test_x)'{to})\n")
    write(repo, "gates/setup.yaml", "gate: setup\ndriver:\n  type: command\n  format: unittest\n"
                                    "  run: [python3, -m, unittest, -v, tests.test_tc]\n  timeout: 60\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TestCase")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return str(a) + b'\nexpect: {red: [setup]}\n")
    proc = mutate(repo, "--json", "--no-cache")
    (item,) = json.loads(proc.stdout)["items"]
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


STDERR_PRINTER = '''

def test_reports_on_stderr():
    import sys
    try:
        add(1, 2)
    except TypeError:       # a test tool's test echoing what it saw, only where the code broke
        print("= 1 failed, 1 passed in 0.01s =", file=sys.stderr)
'''


@pytest.mark.parametrize("flags", ["-s", "-qs"])
def test_a_setup_error_beside_a_summary_printed_to_stderr_is_not_a_kill(repo: Path, flags: str):
    """pytest writes its report to stdout; a line on stderr comes after it in the record's order."""
    write(repo, "tests/test_fixture.py", FIXTURE.split("\n\ndef test_prints")[0] + "\n" + STDERR_PRINTER)
    item = _outcome(repo, flags, printing=None)
    assert item["verdict"] == "DISCARDED", {k: item.get(k) for k in ("verdict", "cause", "reason", "gates")}
    assert "never a kill" in item["reason"], item
