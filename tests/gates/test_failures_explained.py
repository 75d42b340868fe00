"""A RED says what failed and where (issue 35, item 1): a new user's toy project (src layout, one
failing test) run through the real `gates` CLI and real pytest names the failing test's id and
its assertion message in the terminal table, `--json`, JUnit, the HTML page, GitHub annotations,
`gates show` and `gates regrade`; an import error names the exception; a configured gate folder
that does not exist is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.gates.conftest import git

TEST_ID = "tests/test_toy.py::test_add"
MESSAGE = "AssertionError: add(2, 3) should be 5"


def toy(root: Path, pythonpath: bool = True) -> Path:
    """A src-layout project with one failing test (and one passing), its gate, committed."""
    (root / "src" / "toy").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "gates").mkdir()
    (root / "src" / "toy" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_toy.py").write_text(
        "from toy import add\n\n\ndef test_add():\n    assert add(2, 3) == 5, \"add(2, 3) should be 5\"\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n")
    (root / "gates" / "toy.yaml").write_text("gate: toy\ndriver: {type: pytest, run: tests}\n")
    if pythonpath:
        (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\npythonpath = [\"src\"]\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    return root


def gates(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", *args, "--root", str(root)],
                          capture_output=True, text=True, timeout=300, env={**clean, **(env or {})}, cwd=root)


@pytest.fixture(scope="module")
def red_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One `gates run` of the toy project writing every report, as a GitHub Actions step would."""
    root = toy(tmp_path_factory.mktemp("toy") / "proj")
    out = root.parent / "out"
    proc = gates(root, "run", "-q", "--json", "--junit", str(out / "junit.xml"), "--html", str(out / "gates.html"),
                 env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(root)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return root, proc


def test_the_table_lists_the_failing_test_under_its_gate_like_pytest_rf(red_run):
    root, _ = red_run
    proc = gates(root, "run", "-q")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("toy "))
    assert "RED" in lines[row] and "exit 1, expected 0 (1 failed)" in lines[row]
    assert lines[row + 1] == f"    FAILED {TEST_ID} - {MESSAGE} (at tests/test_toy.py:5)"


def test_json_holds_the_failures_list_with_id_message_file_and_line(red_run):
    _, proc = red_run
    (item,) = json.loads(proc.stdout)["items"]
    assert item["verdict"] == "RED"
    assert item["failures"] == [{"id": TEST_ID, "message": MESSAGE, "file": "tests/test_toy.py", "line": 5}]
    assert item["more_failures"] == 0
    assert "1 failed, 1 passed" in item["output_tail"]


def test_junit_failure_message_names_the_test_and_system_out_holds_the_output_tail(red_run):
    root, _ = red_run
    case = ET.parse(root.parent / "out" / "junit.xml").getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == "toy"
    failure = case.find("failure")
    assert failure is not None and TEST_ID in failure.get("message", "") and MESSAGE in failure.get("message", "")
    out = case.find("system-out")
    assert out is not None and "assert add(2, 3) == 5" in (out.text or "") and "1 failed, 1 passed" in (out.text or "")


def test_github_annotation_points_at_the_failing_test_line(red_run):
    _, proc = red_run
    title = f"FAILED {TEST_ID} (toy)".replace(":", "%3A")    # a property's `:` escaped, as GitHub reads it
    assert f"::error file=tests/test_toy.py,line=5,title={title}::{MESSAGE}" in proc.stderr.splitlines(), proc.stderr


def test_show_and_regrade_derive_the_failures_from_the_stored_record(red_run):
    root, proc = red_run
    record = json.loads(proc.stdout)["items"][0]["evidence"]
    shown = gates(root, "show", record)
    assert f"  FAILED {TEST_ID} - {MESSAGE} (at tests/test_toy.py:5)" in shown.stdout.splitlines(), shown.stdout
    regraded = gates(root, "regrade", "--json", record)
    (item,) = json.loads(regraded.stdout)["items"]
    assert item["verdict"] == "RED" and item["failures"][0]["id"] == TEST_ID
    assert item["failures"][0]["message"] == MESSAGE


def test_an_import_error_names_the_exception_not_collection_errors(tmp_path: Path):
    root = toy(tmp_path / "proj", pythonpath=False)     # src layout without pythonpath: `import toy` fails
    proc = gates(root, "run", "-q", "--json")
    (item,) = json.loads(proc.stdout)["items"]
    assert item["verdict"] == "RED"
    assert "ModuleNotFoundError: No module named 'toy'" in item["reason"], item["reason"]
    assert "collection errors?" not in item["reason"]
    assert item["failures"] == [{"id": "tests/test_toy.py", "message": "ModuleNotFoundError: No module named 'toy'",
                                 "file": "tests/test_toy.py", "line": 1}]


def test_a_configured_gate_folder_that_does_not_exist_is_named(tmp_path: Path):
    root = toy(tmp_path / "proj")
    (root / "redfirst.yaml").write_text("gates:\n  paths: [gate]\n")
    proc = gates(root, "run", "-q")
    assert proc.returncode == 2
    assert f"{root / 'redfirst.yaml'}:2: gate folder `gate/` from redfirst.yaml:2 does not exist" in proc.stderr
    assert "No gate selected" not in proc.stdout


def test_html_page_has_a_row_per_failed_case_and_the_runs_date_commit_and_version_in_real_chromium(red_run):
    from tests.gates.test_html_report import dom_tables, headless, png_pixels, rgb

    root, proc = red_run
    page = root.parent / "out" / "gates.html"
    rows = dom_tables(page)["verdicts"]
    gate = next(i for i, row in enumerate(rows) if row[0] == "toy")
    assert rows[gate][1] == "RED"
    assert rows[gate + 1] == ["", "FAILED", TEST_ID, "tests/test_toy.py:5", MESSAGE]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    dom = headless(page, "--dump-dom").stdout
    facts = json.loads(proc.stdout)["run"]
    assert facts["commit"] == commit and facts["date"].endswith("Z")
    assert f"commit <code>{commit[:12]}</code>" in dom and f"redfirst {facts['redfirst']}" in dom
    assert f"<time>{facts['date']}</time>" in dom
    shot = root.parent / "out" / "gates-red.png"
    headless(page, f"--screenshot={shot}", "--window-size=1100,360")
    colours = png_pixels(shot)
    assert rgb("#cf222e") in colours and rgb("#fff8f8") in colours     # the RED cell and the failed case's row
    if os.environ.get("REDFIRST_DOCS_SCREENSHOTS"):     # refresh the guide's screenshot from this very run
        (Path(__file__).parents[2] / "docs" / "gates-red.png").write_bytes(shot.read_bytes())


def test_at_most_ten_failed_cases_are_named_and_the_rest_counted(tmp_path: Path):
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "many.py").write_text("print('1..12')\nfor i in range(1, 13):\n    print(f'not ok {i} - case {i}')\n")
    (root / "gates" / "many.yaml").write_text("gate: many\ndriver: {type: command, run: [python3, many.py], format: tap}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    (item,) = json.loads(gates(root, "run", "-q", "--json").stdout)["items"]
    assert item["verdict"] == "RED" and item["more_failures"] == 2
    assert [f["id"] for f in item["failures"]] == [f"{i} - case {i}" for i in range(1, 11)]
    table = gates(root, "run", "-q").stdout.splitlines()
    assert "    FAILED 10 - case 10 - not ok" in table and "    ... and 2 more" in table, table
