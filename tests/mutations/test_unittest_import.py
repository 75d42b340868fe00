"""A mutation that makes a unittest gate's test module fail to import is DISCARDED, as pytest's
collection errors are (DESIGN section 3): real `python -m unittest -v` runs, by module name
(a loader traceback, exit 1) and by discovery (unittest.loader._FailedTest), never a kill."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

CALC = "def add(a, b):\n    return a + b\n"
TEST = "import unittest\nimport ucalc\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n" \
       "        self.assertEqual(ucalc.add(1, 2), 3)\n"


def _project(repo: Path, run: str) -> None:
    write(repo, "ucalc.py", CALC)
    write(repo, "utests/test_ucalc.py", TEST)
    write(repo, "gates/ucalc.yaml", f"gate: ucalc\ndriver: {{type: command, run: {run}, format: unittest}}\n")
    write(repo, "mutations/ucalc.yaml",
          '- mutation: no-import\n  file: ucalc.py\n  anchor: "def add(a, b):"\n'
          '  replace: "undefined_name\\ndef add(a, b):"\n  expect: {red: [ucalc]}\n'
          '- mutation: minus\n  file: ucalc.py\n  anchor: "a + b"\n  replace: "a - b"\n  expect: {red: [ucalc]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "ucalc")


@pytest.mark.parametrize("run", [
    f"[{sys.executable}, -m, unittest, -v, test_ucalc]",          # by name: the loader's traceback
    f"[{sys.executable}, -m, unittest, discover, -v, -s, utests]",   # discovery: a _FailedTest
])
def test_a_mutation_that_breaks_the_test_modules_import_is_discarded_not_killed(repo: Path, run: str) -> None:
    if "discover" not in run:
        run = run.replace("test_ucalc]", "utests.test_ucalc]")
    _project(repo, run)
    proc = mutate(repo, "--json", "--no-cache")
    items = {i["id"]: i for i in json.loads(proc.stdout)["items"]}
    assert items["minus"]["verdict"] == "KILLED", proc.stdout + proc.stderr       # the control: a real kill
    assert items["no-import"]["verdict"] == "DISCARDED", items["no-import"]
    assert "import" in items["no-import"]["reason"]
