"""KILLED only from a test that failed as it ran (outcome.not_a_kill): a red made of set-up or
teardown errors alone (pytest's JUnit `<error>`, no `<failure>`), or of a TAP run that bailed out,
is DISCARDED, never a kill, as a module that no longer imports is. A test whose call raised
(an exception from the code under test, mutmut's kill too) stays a kill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write


def _outcome(repo: Path, mutation: str) -> dict:
    write(repo, "mutations/m.yaml", mutation)
    proc = mutate(repo, "--json", "--no-cache")
    assert proc.stdout.strip(), proc.stderr
    (item,) = json.loads(proc.stdout)["items"]
    return item


def test_a_red_of_setup_errors_alone_is_not_a_kill(repo: Path):
    write(repo, "tests/fixtured/conftest.py", "import pytest\n\nfrom calc import add\n\n\n@pytest.fixture\n"
                                              "def three():\n    assert add(1, 2) == 3, 'set-up'\n    return 3\n")
    write(repo, "tests/fixtured/test_uses.py", "def test_three(three):\n    assert three == 3\n")
    write(repo, "gates/fixtured.yaml", "gate: fixtured\ndriver:\n  type: pytest\n  run: [tests/fixtured]\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a fixture")
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\nreplace: 'return a - b'\n"
                          "expect: {red: [fixtured]}\n")
    assert item["verdict"] == "DISCARDED", item
    assert "set-up or teardown" in item["reason"] and "never a kill" in item["reason"], item


def test_a_call_that_raised_from_the_code_under_test_is_a_kill(repo: Path):
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                          "replace: 'return a + None'\nexpect: {red: [add]}\n")
    assert item["verdict"] == "KILLED", item


def test_a_tap_run_that_bailed_out_is_not_a_kill(repo: Path):
    write(repo, "tap_check.py", "from calc import add\n\nif add(1, 2) != 3:\n    print('Bail out! calc is broken')\n"
                                "    raise SystemExit(1)\nprint('1..1')\nprint('ok 1 - add')\n")
    write(repo, "gates/tap.yaml", "gate: tap\ndriver:\n  type: command\n  run: [python3, tap_check.py]\n"
                                  "  format: tap\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TAP gate")
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\nreplace: 'return a - b'\n"
                          "expect: {red: [tap]}\n")
    assert item["verdict"] == "DISCARDED", item
    assert "bailed out" in item["reason"] and "never a kill" in item["reason"], item



def test_a_tap_skip_the_harness_counts_failed_is_not_a_kill(repo: Path):
    """kselftest's old `not ok N # SKIP`: TAP's harness fails it (never GREEN), but the test declared
    a skip under the mutation: no check failed."""
    write(repo, "tap_check.py", "from calc import add\n\nprint('1..1')\n"
                                "print('ok 1 - add' if add(1, 2) == 3 else 'not ok 1 - add # SKIP calc is off')\n")
    write(repo, "gates/tap.yaml", "gate: tap\ndriver:\n  type: command\n  run: [python3, tap_check.py]\n"
                                  "  format: tap\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TAP gate")
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\nreplace: 'return a - b'\n"
                          "expect: {red: [tap]}\n")
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


def test_a_tap_program_that_died_beside_a_todo_subtest_is_not_a_kill(repo: Path):
    """Only TAP's top-level lines count: an indented `not ok` (a subtest of a known failure, or
    its YAML diagnostics) is no failed test of the run."""
    write(repo, "tap_check.py", "print('TAP version 14')\nprint('1..2')\nprint('# Subtest: rounding')\n"
                                "print('    1..1')\nprint('    not ok 1 - half-even')\n"
                                "print('not ok 1 - rounding # TODO half-even')\n"
                                "from calc import add\nprint('ok 2 - add' if add(1, 2) == 3 else 'not ok 2 - add')\n")
    write(repo, "gates/tap.yaml", "gate: tap\ndriver:\n  type: command\n  run: [python3, tap_check.py]\n"
                                  "  format: tap\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TAP gate")
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\nreplace: 'return a + None'\n"
                          "expect: {red: [tap]}\n")
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item

# helper-7: the same set-up error through the other routes; a TAP program that died importing
TC = '''
import unittest

from calc import add


class T(unittest.TestCase):
    def setUp(self):
        self.total = add(2, 3)

    def test_runs(self):
        self.assertEqual(self.total, 5)
'''
FIXTURE = '''
import pytest

from calc import add


@pytest.fixture
def total():
    return add(2, 3)


def test_runs(total):
    assert total == 5
'''
ROUTES = {
    "unittest-under-pytest": ("tests/test_tc.py", TC, "type: pytest\n  run: [tests/test_tc.py]"),
    "format-pytest": ("tests/test_fixture.py", FIXTURE,
                      "type: command\n  format: pytest\n  run: [python3, -m, pytest, -q, tests/test_fixture.py]"),
    "format-unittest": ("tests/test_tc.py", TC,
                        "type: command\n  format: unittest\n  run: [python3, -m, unittest, -v, tests.test_tc]"),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_setup_error_is_not_a_kill_on_any_route(repo: Path, route: str):
    rel, text, driver = ROUTES[route]
    write(repo, rel, text)
    write(repo, "gates/setup.yaml", f"gate: setup\ndriver:\n  {driver}\n  timeout: 60\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a set-up")
    item = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                          "replace: 'return str(a) + b'\nexpect: {red: [setup]}\n")
    assert item["verdict"] == "DISCARDED", item
    assert "never a kill" in item["reason"], item


def test_a_tap_program_that_died_before_any_test_failed_is_not_a_kill(repo: Path):
    write(repo, "tap_check.py", "print('1..1')\nfrom calc import add\n\nprint('ok 1 - add' if add(1, 2) == 3 else "
                                "'not ok 1 - add')\n")
    write(repo, "gates/tap.yaml", "gate: tap\ndriver:\n  type: command\n  run: [python3, tap_check.py]\n"
                                  "  format: tap\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a TAP gate")
    died = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'def add(a, b):'\n"
                          "replace: \"import no_such_module_xyz\\n\\n\\ndef add(a, b):\"\nexpect: {red: [tap]}\n")
    assert died["verdict"] == "DISCARDED", died
    assert "never a kill" in died["reason"] and "SyntaxError" not in died["reason"], died
    failed = _outcome(repo, "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\nreplace: 'return a - b'\n"
                            "expect: {red: [tap]}\n")
    assert failed["verdict"] == "KILLED", failed
