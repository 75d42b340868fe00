"""A case counts only when it ran (issue 33 item 2): pytest's `--setup-plan` and `--setup-only` list
every case in the JUnit report (a testcase element with no failure) while running none ("no tests
ran"; the suite's own `tests="0"`), so a failing test read as a pass, GREEN."""

from __future__ import annotations

from pathlib import Path

import pytest

from redfirst.gates.parsers import get
from tests.gates.engine_project import project, run_json

FAILING = {"pytest.ini": "[pytest]\n", "tests/test_a.py": "def test_a():\n    assert False\n"}


@pytest.mark.parametrize("flag", ["--setup-plan", "--setup-only"])
@pytest.mark.parametrize("where", ["run", "addopts"])
def test_a_pytest_gate_that_runs_no_case_is_never_green(tmp_path: Path, flag: str, where: str):
    files = dict(FAILING)
    if where == "addopts":
        files["pytest.ini"] = f"[pytest]\naddopts = {flag}\n"
    run = f"[tests, {flag}]" if where == "run" else "[tests]"
    root = project(tmp_path, f"gate: g\ndriver: {{type: pytest, run: {run}}}\n", files)
    code, items = run_json(root)
    assert items["g"]["verdict"] != "GREEN" and code != 0, items["g"]


def test_a_junit_suite_that_says_it_ran_fewer_cases_than_it_lists_as_run_is_in_doubt():
    xml = ('<testsuites><testsuite name="pytest" tests="0" failures="0" errors="0" skipped="0">'
           '<testcase classname="tests.test_a" name="test_a" time="0.000" /></testsuite></testsuites>')
    counts = get("junit").parse("", "", xml)
    assert counts.doubt and "tests=\"0\"" in counts.doubt, counts


def test_a_junit_suite_whose_count_matches_its_cases_is_not_in_doubt():
    xml = ('<testsuite name="s" tests="2" failures="1"><testcase name="a" time="0.01" /><testcase name="b">'
           '<failure message="x" /></testcase></testsuite>')
    counts = get("junit").parse("", "", xml)
    assert counts.doubt is None and (counts.passed, counts.failed) == (1, 1), counts
