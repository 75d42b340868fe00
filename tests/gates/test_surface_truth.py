"""The report surface tells the run's verdict and nothing else (issue #16 review): a run that
stops before grading still writes its --html page and --json document, every --json document
is on the shipped output schema with `exit` equal to the exit status, and a report path that
cannot be written is a usage error (exit 2), never a traceback read as RED. Real processes,
real git projects in tmp folders, real headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

COMMANDS = {"gates": "redfirst.gates.cli", "mutate": "redfirst.mutations.cli", "checkers": "redfirst.checkers.cli"}


def cli(command: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", COMMANDS[command], *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def one_document(proc: subprocess.CompletedProcess[str]) -> dict:
    """stdout is exactly one JSON document on `gates schema --output`, and it tells the exit status."""
    assert proc.stdout.strip(), f"no JSON document on stdout (rc {proc.returncode}): {proc.stderr[-2000:]}"
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, json.loads(cli("gates", "schema", "--output").stdout))
    assert doc["exit"] == proc.returncode, proc.stderr[-2000:]
    return doc


def dom(page: Path) -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           f"--user-data-dir={page.parent / 'chromium-profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "<table" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture
def project(make_project) -> Path:
    return make_project()


def test_gates_run_that_stops_at_load_replaces_the_last_green_html_page(project: Path, tmp_path: Path):
    page = tmp_path / "out" / "gates.html"
    assert cli("gates", "run", "-q", "--root", str(project), "--html", str(page)).returncode == 0
    assert ">GREEN<" in dom(page)
    (project / "gates" / "bad.yaml").write_text("gate: [\n")
    proc = cli("gates", "run", "-q", "--root", str(project), "--html", str(page), "--json")
    assert proc.returncode == 2
    one_document(proc)
    shown = dom(page)
    assert ">GREEN<" not in shown, "the page of this ERROR run still shows the last run's GREEN"
    assert "exit status 2" in shown and "bad.yaml:2" in shown


def test_mutate_usage_error_still_prints_one_json_document_and_its_page(project: Path, tmp_path: Path):
    page = tmp_path / "out" / "mutate.html"
    proc = cli("mutate", "--root", str(project), "--file", "value.txt", "--anchor", "good", "--replace", "bad",
               "--gate", "no-such-gate", "--json", "--html", str(page), cwd=project)
    assert proc.returncode == 2, proc.stderr
    doc = one_document(proc)
    assert "no-such-gate" in json.dumps(doc)
    shown = dom(page)
    assert "exit status 2" in shown and "no-such-gate" in shown


def test_mutate_json_of_a_killed_mutation_is_on_the_output_schema(project: Path):
    proc = cli("mutate", "--root", str(project), "--file", "value.txt", "--anchor", "good", "--replace", "bad",
               "--gate", "value-check", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert [i["verdict"] for i in one_document(proc)["items"]] == ["KILLED"]


def test_checkers_run_json_is_on_the_output_schema(project: Path):
    one_document(cli("checkers", "run", "--json", "--root", str(project), cwd=project))


@pytest.mark.parametrize("command", ["gates", "mutate"])
def test_an_html_path_that_cannot_be_written_is_exit_2_not_a_traceback(command: str, project: Path, tmp_path: Path):
    args = ["run", "-q"] if command == "gates" else ["--file", "value.txt", "--anchor", "good", "--replace", "bad",
                                                     "--gate", "value-check"]
    proc = cli(command, *args, "--root", str(project), "--html", str(tmp_path), "--json", cwd=project)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert str(tmp_path) in proc.stderr
    one_document(proc)


def test_step_summary_of_a_run_whose_report_could_not_be_written_is_not_green(project: Path, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    proc = cli("gates", "run", "-q", "--root", str(project), "--html", str(tmp_path), cwd=project)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "verdict=ERROR" in output.read_text(), (output.read_text(), summary.read_text())


def test_a_gate_file_that_cannot_be_read_is_an_error_not_a_gate_left_out(project: Path):
    # A gate file symlinked to a checkout that is not there: its gate must not silently drop out of the run.
    (project / "gates" / "shared.yaml").symlink_to(project / "no-such-checkout" / "shared.yaml")
    for sub in ("check", "run"):
        proc = cli("gates", sub, "--root", str(project), "--json")
        assert proc.returncode == 2, (sub, proc.stdout, proc.stderr)
        assert "shared.yaml" in proc.stderr
        one_document(proc)


def test_mutate_check_json_with_a_bad_mutation_file_is_one_document(project: Path):
    (project / "mutations").mkdir()
    (project / "mutations" / "bad.yaml").write_text("mutation: [\n")
    proc = cli("mutate", "check", "--json", "--root", str(project), cwd=project)
    assert proc.returncode == 2, proc.stderr
    assert "bad.yaml" in json.dumps(one_document(proc))


def test_mutate_sweep_json_that_cannot_start_is_still_one_document(project: Path):
    # A fresh one-commit clone: HEAD~1 (the default --since) does not resolve.
    proc = cli("mutate", "sweep", "--json", "--root", str(project), cwd=project)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.strip(), f"no JSON document on stdout: {proc.stderr[-2000:]}"
    doc = json.loads(proc.stdout)
    assert doc["exit"] == 2 and "HEAD~1" in " ".join(doc["errors"])
