"""A hostile evidence store and hostile gate files are messages, never tracebacks (issue 34.3):
`gates list`/`gates gc` beside a dangling symbolic link, a `verdict.json` that is a JSON list, a
`record.json` with a key written twice, a whole bound written as a float, invalid UTF-8."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _gates(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", *args, "--root", str(root)],
                          capture_output=True, text=True, timeout=300, cwd=root)


def _stored(make_project) -> tuple[Path, Path]:
    root = make_project()
    proc = _gates(root, "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (record,) = (root / ".redfirst" / "evidence").iterdir()
    return root, record


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["gc"]])
def test_a_dangling_link_in_the_store_is_named_not_a_traceback(make_project, command):
    root, record = _stored(make_project)
    stray = root / ".redfirst" / "evidence" / "dangling"
    stray.symlink_to(root / "nowhere")
    proc = _gates(root, *command)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{stray}: " in proc.stderr and "not a record folder" in proc.stderr
    assert record.is_dir() and stray.is_symlink()  # gc removes no record and follows no link
    if command == ["list"]:
        assert record.name[:12] in proc.stdout  # the real records are still listed


@pytest.mark.parametrize("command", [["list"], ["list", "--json"]])
def test_a_verdict_file_that_is_a_json_list_is_named_with_its_line(make_project, command):
    root, record = _stored(make_project)
    (record / "verdict.json").write_text("[1,\n 2]\n")
    proc = _gates(root, *command)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{record / 'verdict.json'}:1: " in proc.stderr and "JSON object" in proc.stderr
    if command[-1] == "--json":
        assert json.loads(proc.stdout)["exit"] == 2


def test_a_record_with_a_key_written_twice_is_refused_naming_its_line(make_project):
    root, record = _stored(make_project)
    text = (record / "record.json").read_text()
    (record / "record.json").write_text(text.replace('\n "gate_id"', '\n "gate_id": "forged",\n "gate_id"', 1))
    for command in (["show", record.name], ["show", record.name, "--json"], ["regrade", record.name]):
        proc = _gates(root, *command)
        both = proc.stdout + proc.stderr
        assert proc.returncode == 2 and "Traceback" not in both, both
        assert f"{record / 'record.json'}:" in both and "duplicate key 'gate_id'" in both


@pytest.mark.parametrize(("bound", "run_exit"), [("cases: 1.0", 0), ("cases: 2.0", 1), ("cases: {min: 1.0}", 0),
                                               ("assertions: 2.0", 2)])
def test_a_whole_bound_written_as_a_float_is_checked_and_holds_not_a_crash(make_project, bound, run_exit):
    gate = ("gate: floaty\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n"
            f"assert: {{exit: 0, {bound}}}\n")
    root = make_project({"f.yaml": gate}, value_check=False)
    for command, expected in ((["check"], 2 if run_exit == 2 else 0), (["run"], run_exit)):
        proc = _gates(root, *command)
        both = proc.stdout + proc.stderr
        assert "Traceback" not in both and proc.returncode == expected, both
    if run_exit == 2:
        assert f"{root / 'gates' / 'f.yaml'}:3: " in both


@pytest.mark.parametrize("where", ["gates/bad.yaml", "redfirst.yaml"])
def test_invalid_utf8_names_file_and_the_line_of_the_bad_byte(make_project, where):
    root = make_project()
    path = root / where
    path.write_bytes((path.read_bytes() if path.exists() else b"") + b"# line\n# caf\xe9\n")
    lines = path.read_bytes().count(b"\n")
    proc = _gates(root, "check")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{path}:{lines}: " in both and "UTF-8" in both
